"""POST /v1/context: assemble the ContextPacket and record why every considered item was or was not served.

Pipeline (each step is named in the trace's timings):
 1. embed      the query (LRU-cached); a failing embedder or a degenerate vector switches to the degraded
               path: full-text rank and recency only, with a warning.
 2. retrieve   phase 1 (dense top-K by hnsw ∪ lexical top-K by GIN) and phase 2 (hybrid score on the union),
               one SQL round trip (context/retrieval.py). Hard filters are in the SQL.
 3. episodes   the nearest events of the scope (hnsw), scored the same way.
 4. pack       blocked facts out (open conflict, expired volatility), the relevance floor out, then facts and
               episodes together in descending score while they fit the token budget.
 5. multi_hop  if budget remains: facts sharing an entity with the facts served, by full text, one hop.
 6. trace      one trace row and one decision row per item considered, in one statement.
"""
from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, field

from django.conf import settings
from django.utils import timezone

from context import retrieval
from context.entities import extract_entities
from context.render import render_packet
from context.scoring import TAU_SECONDS, estimate_tokens, hybrid_score
from facts.selectors import volatility_cutoffs
from hakimem.embeddings import EmbedderUnavailable, get_embedder, is_degenerate
from traces.models import ReasonCode
from traces.services import DecisionRow, trace_record

logger = logging.getLogger("hakimem.context")

WARNING_EMBEDDER_UNAVAILABLE = "embedder_unavailable"
WARNING_DEGENERATE_VECTOR = "degenerate_query_vector"


def _iso(value):
    return value.isoformat().replace("+00:00", "Z") if value else None


@dataclass
class _Decided:
    item: object
    rank: int
    reason: str
    tokens: int
    entity: str = ""


@dataclass
class _Timer:
    marks: dict = field(default_factory=dict)
    start: float = field(default_factory=time.perf_counter)
    last: float = 0.0

    def __post_init__(self):
        self.last = self.start

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.marks[name] = round((now - self.last) * 1000, 3)
        self.last = now

    def total(self) -> float:
        return round((time.perf_counter() - self.start) * 1000, 3)


def _query_vector(query: str, warnings: list[str]):
    try:
        vector = get_embedder().embed_query(query)
    except EmbedderUnavailable as exc:
        logger.warning("context: embedder unavailable, degraded to full-text and recency (%s)", exc)
        warnings.append(WARNING_EMBEDDER_UNAVAILABLE)
        return None
    if is_degenerate(vector):
        logger.warning("context: degenerate query vector, degraded to full-text and recency")
        warnings.append(WARNING_DEGENERATE_VECTOR)
        return None
    return vector


MULTI_HOP_BUDGET_SHARE = 0.2  # see docs/quality.md for the measurement behind it

# Decisions a multi-hop pass never revisits: already served, or blocked.
_SETTLED = (ReasonCode.INCLUDED, ReasonCode.CONFLICT_OPEN, ReasonCode.VOLATILITY_EXPIRED)


def _pack(items: list[_Decided], budget_left: int, fits_reason: str) -> int:
    """Greedy in the given order; an item that does not fit is excluded and smaller ones after it may
    still fit. Returns the budget left."""
    for decided in items:
        if decided.tokens <= budget_left:
            decided.reason = fits_reason
            budget_left -= decided.tokens
        else:
            decided.reason = ReasonCode.OVER_BUDGET
    return budget_left


def context_assemble(*, project_id: str, subject_id: str, query: str, budget_tokens: int) -> dict:
    timer = _Timer()
    warnings: list[str] = []
    now = timezone.now()
    max_distance = settings.HAKI_RECALL_MAX_DISTANCE

    qvec = _query_vector(query, warnings)
    timer.lap("embed")

    base = {
        "project_id": project_id,
        "subject_id": subject_id,
        **retrieval.text_queries(query, subject_id),
        "now": now,
        "tau_seconds": TAU_SECONDS,
        "cutoffs": volatility_cutoffs(now),
    }
    candidates = retrieval.fact_candidates(qvec=qvec, **base)
    timer.lap("retrieve")

    for c in candidates:
        c.score = hybrid_score(c.similarity, c.text_rank, c.recency)
    candidates.sort(key=lambda c: (-c.score, -c.recency, str(c.id)))
    decided = [_Decided(item=c, rank=i + 1, reason="", tokens=estimate_tokens(c.text)) for i, c in enumerate(candidates)]

    episodes = retrieval.episode_candidates(qvec=qvec, **base)
    for e in episodes:
        e.score = hybrid_score(e.similarity, e.text_rank, e.recency)
    episodes.sort(key=lambda e: (-e.score, str(e.id)))
    episode_decided = [_Decided(item=e, rank=i + 1, reason="", tokens=estimate_tokens(e.text)) for i, e in enumerate(episodes)]
    timer.lap("episodes")

    floor_hits = 0
    packable = []
    for d in decided + episode_decided:
        item = d.item
        if getattr(item, "in_open_conflict", False):
            d.reason = ReasonCode.CONFLICT_OPEN
        elif getattr(item, "expired", False):
            d.reason = ReasonCode.VOLATILITY_EXPIRED
        elif max_distance > 0 and item.distance is not None and item.distance > max_distance:
            d.reason = ReasonCode.BELOW_RELEVANCE_FLOOR
            floor_hits += 1
        else:
            packable.append(d)
    # Facts and episodes compete on one score for one budget. The seed packs facts first and gives episodes
    # only what is left; on the quality harness that served no episode at all once a scope held ~900
    # tokens of facts (evidence recall of "when" questions: 0.00), see docs/quality.md.
    packable.sort(key=lambda d: (-d.item.score, str(d.item.id)))
    # A share of the budget waits for multi-hop: filled greedily, the first pass always spent it all and the
    # second hop never got in. What multi-hop does not use goes back to the first pass's ranking below.
    reserve = int(budget_tokens * MULTI_HOP_BUDGET_SHARE)
    budget_left = _pack(packable, budget_tokens - reserve, ReasonCode.INCLUDED) + reserve
    timer.lap("pack")

    # Multi-hop: never subject to the floor (its purpose is to bring back evidence far from the query).
    included = [d for d in decided if d.reason == ReasonCode.INCLUDED]
    if budget_left > 0 and included:
        entities = extract_entities([d.item.text for d in included], query, retrieval.MULTI_HOP_MAX_ENTITIES)
        settled = [d.item.id for d in decided if d.reason in _SETTLED]
        hops = retrieval.multi_hop_candidates(entities=entities, exclude_ids=settled, **base)
        by_id = {d.item.id: d for d in decided}
        hop_decided = []
        for entity, c in hops:
            if c.id in by_id:  # already a candidate (over budget or under the floor): decided again here
                d = by_id[c.id]
                if d.entity:  # named by both entities: one decision
                    continue
                d.entity = entity
            else:
                c.score = hybrid_score(None, 0.0, c.recency)
                d = _Decided(item=c, rank=len(decided) + 1, reason="", tokens=estimate_tokens(c.text), entity=entity)
                decided.append(d)
                by_id[c.id] = d
            hop_decided.append(d)
        budget_left = _pack(hop_decided, budget_left, ReasonCode.MULTI_HOP_EXPANSION)
    # Give back what multi-hop left: the first pass's ranking continues where it stopped.
    leftovers = [d for d in packable if d.reason == ReasonCode.OVER_BUDGET]
    budget_left = _pack(leftovers, budget_left, ReasonCode.INCLUDED)
    timer.lap("multi_hop")

    served_facts = [d for d in decided if d.reason in (ReasonCode.INCLUDED, ReasonCode.MULTI_HOP_EXPANSION)]
    served_facts.sort(key=lambda d: (d.reason != ReasonCode.INCLUDED, d.rank))
    served_episodes = [d for d in episode_decided if d.reason == ReasonCode.INCLUDED]

    conflicts = sum(1 for d in decided if d.reason == ReasonCode.CONFLICT_OPEN)
    expired = sum(1 for d in decided if d.reason == ReasonCode.VOLATILITY_EXPIRED)
    if conflicts:
        warnings.append(f"open_conflict: {conflicts} fact(s) hidden pending conflict resolution")
    if expired:
        warnings.append(f"volatility_expired: {expired} fact(s) hidden as stale")

    facts_out = [
        {
            "id": str(d.item.id),
            "text": d.item.text,
            "category": d.item.category,
            "kind": d.item.kind,
            "score": round(d.item.score, 6),
            "tokens": d.tokens,
            "reason_code": str(d.reason),
            "valid_from": _iso(d.item.valid_from),
            "recorded_from": _iso(d.item.recorded_from),
            "metadata": d.item.metadata,
        }
        for d in served_facts
    ]
    episodes_out = [
        {
            "id": str(d.item.id),
            "text": d.item.text,
            "occurred_at": _iso(d.item.occurred_at),
            "score": round(d.item.score, 6),
            "tokens": d.tokens,
            "metadata": d.item.metadata,
        }
        for d in served_episodes
    ]
    nothing_served = not facts_out and not episodes_out
    empty_reason = "no_relevant_memory" if nothing_served and floor_hits else None
    status = "degraded" if warnings else "ok"
    used_tokens = budget_tokens - budget_left
    rendered = render_packet(facts_out, episodes_out)
    timer.lap("render")

    trace_id = uuid.uuid4()
    rows = [
        DecisionRow(
            item_type="fact", item_id=d.item.id, reason_code=d.reason, rank=d.rank, score=d.item.score,
            similarity=d.item.similarity, cosine_distance=d.item.distance, text_rank=d.item.text_rank,
            recency=d.item.recency, tokens=d.tokens, entity=d.entity,
        )
        for d in decided
    ] + [
        DecisionRow(
            item_type="episode", item_id=d.item.id, reason_code=d.reason, rank=d.rank, score=d.item.score,
            similarity=d.item.similarity, cosine_distance=d.item.distance, text_rank=d.item.text_rank,
            recency=d.item.recency, tokens=d.tokens,
        )
        for d in episode_decided
    ]
    timings = dict(timer.marks)
    latency_ms = timer.total()
    trace_record(
        trace={
            "id": trace_id, "project_id": project_id, "subject_id": subject_id, "query": query,
            "budget_tokens": budget_tokens, "used_tokens": used_tokens, "status": status,
            "empty_reason": empty_reason, "warnings": warnings, "rendered": rendered,
            "facts_served": len(facts_out), "episodes_served": len(episodes_out), "candidates": len(decided),
            "embedder": settings.HAKI_EMBED_PROVIDER, "timings": timings, "latency_ms": latency_ms,
            "created_at": now,
        },
        decisions=rows,
    )
    return {
        "trace_id": str(trace_id),
        "status": status,
        "facts": facts_out,
        "episodes": episodes_out,
        "warnings": warnings,
        "empty_reason": empty_reason,
        "budget_tokens": budget_tokens,
        "used_tokens": used_tokens,
        "rendered": rendered,
    }
