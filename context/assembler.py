"""POST /v1/context: assemble the ContextPacket and record why every considered item was or was not served.

Pipeline (each step is named in the trace's timings):
 1. embed      the query (LRU-cached); a failing embedder or a degenerate vector switches to the degraded
               path: full-text rank and recency only, with a warning.
 2. retrieve   facts: phase 1 (dense top-K by hnsw or an exact sort ∪ lexical top-K by GIN) and phase 2
               (hybrid score on the union), one SQL round trip (context/retrieval.py). Hard filters are in
               the SQL.
 3. episodes   the same two phases over the scope's events; facts and episodes are then ranked together and
               the CANDIDATE_LIMIT best of both are the call's candidates.
 4. pack       blocked facts out (no consent to their category, open conflict, expired volatility), the
               relevance floor out, then the rest in
               descending score while they fit the token budget, a share held back for multi-hop.
               The weights, tau, floor, phase-1 widths and multi-hop share are one AssemblyConfig
               (context/config.py): today's constants for a call, overridable by a replay (context/replay.py).
 5. multi_hop  if budget remains: facts sharing an entity with the facts served, by full text, one hop; then
               what it left goes back to the ranking.
 6. trace      one trace row and one decision row per candidate, in one statement.
"""
from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, field, replace

from django.conf import settings
from django.utils import timezone

from context import retrieval, retrieval_asof
from context.config import AssemblyConfig, default_config
from context.entities import extract_entities
from context.render import render_packet
from context.scoring import estimate_tokens, hybrid_score
from context.serializers import packet_episode, packet_fact
from facts.selectors import SCOPE_WRITTEN_SQL, consent_gate, volatility_cutoffs
from hakimem.db_router import reads_for_scope
from hakimem.embeddings import EmbedderUnavailable, get_embedder, is_degenerate
from traces.models import EmptyReason, ItemType, ReasonCode, TraceStatus
from traces.services import DecisionRow, trace_record

logger = logging.getLogger("hakimem.context")

WARNING_EMBEDDER_UNAVAILABLE = "embedder_unavailable"
WARNING_DEGENERATE_VECTOR = "degenerate_query_vector"

# The multi-hop share of the budget, like the weights and widths, is a field of context.config.AssemblyConfig
# (default MULTI_HOP_BUDGET_SHARE there), so that a replay can override it.

# A name held by more of the facts table than this links nothing: in a chat stored turn by turn the speakers'
# names are in every fact, and the hop brought back the newest turns that name them (docs/quality.md).
MULTI_HOP_MAX_ENTITY_FREQUENCY = retrieval.LEXICAL_MAX_TERM_FREQUENCY

# Decisions a multi-hop pass never revisits: already served, or blocked.
_SETTLED = (ReasonCode.INCLUDED, ReasonCode.CONFLICT_OPEN, ReasonCode.VOLATILITY_EXPIRED, ReasonCode.CONSENT_MISSING)
_SERVED = (ReasonCode.INCLUDED, ReasonCode.MULTI_HOP_EXPANSION)


@dataclass
class Decided:
    """One candidate of the call and what became of it."""

    item: object  # retrieval.Candidate or retrieval.EpisodeCandidate
    item_type: str  # ItemType
    rank: int
    tokens: int
    reason: str = ""
    entity: str = ""  # the shared name that brought it back, for multi-hop


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


def rank_candidates(facts: list, episodes: list, config: AssemblyConfig | None = None) -> list[Decided]:
    """Facts and episodes on one hybrid score, best first (ties: more recent, then by id), cut to
    CANDIDATE_LIMIT: the call's candidates, each with its rank."""
    pool = [(c, ItemType.FACT) for c in facts] + [(e, ItemType.EPISODE) for e in episodes]
    for item, _ in pool:
        item.score = hybrid_score(item.similarity, item.text_rank, item.recency, config)
    pool.sort(key=lambda p: (-p[0].score, -p[0].recency, str(p[0].id)))
    return [
        Decided(item=item, item_type=kind, rank=i + 1, tokens=estimate_tokens(item.text))
        for i, (item, kind) in enumerate(pool[: retrieval.CANDIDATE_LIMIT])
    ]


def _without_consent(item, consented: frozenset[str] | None) -> bool:
    """A fact whose category its subject does not consent to, in a project that requires consent. Episodes
    carry no category and are not gated."""
    return consented is not None and isinstance(item, retrieval.Candidate) and item.category not in consented


def block(ranked: list[Decided], max_distance: float, consented: frozenset[str] | None = None) -> tuple[list[Decided], int]:
    """Decide the candidates that may not be served (no consent, open conflict, expired volatility, beyond the
    relevance floor); returns the others in rank order and how many the floor held back."""
    packable, floor_hits = [], 0
    for d in ranked:
        item = d.item
        if _without_consent(item, consented):
            d.reason = ReasonCode.CONSENT_MISSING
        elif getattr(item, "in_open_conflict", False):
            d.reason = ReasonCode.CONFLICT_OPEN
        elif getattr(item, "expired", False):
            d.reason = ReasonCode.VOLATILITY_EXPIRED
        elif max_distance > 0 and item.distance is not None and item.distance > max_distance:
            d.reason = ReasonCode.BELOW_RELEVANCE_FLOOR
            floor_hits += 1
        else:
            packable.append(d)
    return packable, floor_hits


def pack(items: list[Decided], budget_left: int, fits_reason: str) -> int:
    """Greedy in the given order; an item that does not fit is excluded and smaller ones after it may
    still fit. Returns the budget left."""
    for decided in items:
        if decided.tokens <= budget_left:
            decided.reason = fits_reason
            budget_left -= decided.tokens
        else:
            decided.reason = ReasonCode.OVER_BUDGET
    return budget_left


class Memory:
    """Where a call's candidates come from: the store as it is now (the hot path of context/retrieval.py)."""

    def __init__(self):
        self.entity_freq: dict[str, float] = {}  # what multi-hop read of each name's frequency, for the trace

    def facts(self, lookup, qvec):
        return retrieval.fact_candidates(lookup, qvec=qvec)

    def episodes(self, lookup, qvec):
        return retrieval.episode_candidates(lookup, qvec=qvec)

    def hop(self, lookup, entities, exclude_ids):
        return retrieval.multi_hop_candidates(lookup, entities=entities, exclude_ids=exclude_ids)

    def name_freq(self, name: str) -> float:
        freq = retrieval.table_stats(retrieval.FACTS).term_freq.get(name, 0.0)
        self.entity_freq[name] = freq
        return freq


class MemoryAsOf(Memory):
    """The store as it stood at a past call's time (context/retrieval_asof.py), with what that call recorded
    of the things the store does not version: the names' frequencies and the volatility verdicts."""

    def __init__(self, *, verdicts: dict, entity_freq: dict):
        super().__init__()
        self.verdicts = verdicts
        self.recorded_freq = entity_freq

    def facts(self, lookup, qvec):
        if qvec is None:  # the as-of statements have no full-text-only path: a replay as it was needs the vector
            raise EmbedderUnavailable("a replay as it was needs the query's vector")
        return retrieval_asof.fact_candidates_as_of(lookup, qvec=qvec, verdicts=self.verdicts)

    def episodes(self, lookup, qvec):
        return retrieval_asof.episode_candidates_as_of(lookup, qvec=qvec)

    def hop(self, lookup, entities, exclude_ids):
        return retrieval_asof.multi_hop_candidates_as_of(lookup, entities=entities, exclude_ids=exclude_ids,
                                                         verdicts=self.verdicts)

    def name_freq(self, name: str) -> float:
        if name in self.recorded_freq:
            self.entity_freq[name] = self.recorded_freq[name]
            return self.recorded_freq[name]
        return super().name_freq(name)


def multi_hop(lookup: retrieval.Lookup, query: str, decided: list[Decided], budget_left: int,
              consented: frozenset[str] | None = None, memory: Memory | None = None,
              config: AssemblyConfig | None = None) -> int:
    """One hop from the facts served to facts that share a name with them, within what budget is left;
    never subject to the relevance floor (its purpose is to bring back evidence far from the query). New
    items are appended to `decided`. Returns the budget left."""
    facts = [d for d in decided if d.item_type == ItemType.FACT]
    included = [d for d in facts if d.reason == ReasonCode.INCLUDED]
    if budget_left <= 0 or not included:
        return budget_left
    memory = memory or Memory()
    entities = extract_entities([d.item.text for d in included], query, retrieval.MULTI_HOP_MAX_ENTITIES,
                                too_common=lambda name: memory.name_freq(name) > MULTI_HOP_MAX_ENTITY_FREQUENCY)
    settled = [d.item.id for d in facts if d.reason in _SETTLED]
    by_id = {d.item.id: d for d in facts}
    hop_decided = []
    for entity, c in memory.hop(lookup, entities, settled):
        if _without_consent(c, consented):
            if c.id not in by_id:  # traced like a first-pass candidate, never served
                d = Decided(item=c, item_type=ItemType.FACT, rank=len(decided) + 1, tokens=estimate_tokens(c.text),
                            reason=ReasonCode.CONSENT_MISSING, entity=entity)
                c.score = hybrid_score(None, 0.0, c.recency, config)
                decided.append(d)
                by_id[c.id] = d
            continue
        if c.id in by_id:  # already a candidate (over budget or under the floor): decided again here
            d = by_id[c.id]
            if d.entity:  # named by both entities: one decision
                continue
            d.entity = entity
        else:
            c.score = hybrid_score(None, 0.0, c.recency, config)
            d = Decided(item=c, item_type=ItemType.FACT, rank=len(decided) + 1, tokens=estimate_tokens(c.text), entity=entity)
            decided.append(d)
            by_id[c.id] = d
        hop_decided.append(d)
    return pack(hop_decided, budget_left, ReasonCode.MULTI_HOP_EXPANSION)


def _warnings_for_blocked(decided: list[Decided]) -> list[str]:
    withheld = sum(1 for d in decided if d.reason == ReasonCode.CONSENT_MISSING)
    conflicts = sum(1 for d in decided if d.reason == ReasonCode.CONFLICT_OPEN)
    expired = sum(1 for d in decided if d.reason == ReasonCode.VOLATILITY_EXPIRED)
    warnings = []
    if withheld:
        warnings.append(f"consent_missing: {withheld} fact(s) withheld without the subject's consent to their category")
    if conflicts:
        warnings.append(f"open_conflict: {conflicts} fact(s) hidden pending conflict resolution")
    if expired:
        warnings.append(f"volatility_expired: {expired} fact(s) hidden as stale")
    return warnings


def _decision_rows(decided: list[Decided]) -> list[DecisionRow]:
    return [
        DecisionRow(
            item_type=d.item_type, item_id=d.item.id, reason_code=d.reason, rank=d.rank, score=d.item.score,
            similarity=d.item.similarity, cosine_distance=d.item.distance, text_rank=d.item.text_rank,
            recency=d.item.recency, tokens=d.tokens, entity=d.entity,
        )
        for d in decided
    ]


@dataclass(frozen=True)
class Rerun:
    """How a replay (context/replay.py) runs a traced call again. as_of None: the store now, at the replay's
    clock. as_of a moment: the store as it stood then (MemoryAsOf), with what the original call recorded of the
    rest (`recorded`: its text queries, consented categories, names' frequencies, volatility verdicts)."""

    replay_of: object
    marks: dict  # {"as_of": ..., "overrides": {...}}, stored on the replay's trace
    as_of: object = None
    recorded: dict = field(default_factory=dict)
    verdicts: dict = field(default_factory=dict)


def _text_query(data: dict | None) -> retrieval.TextQuery | None:
    if data is None:
        return None
    return retrieval.TextQuery(data["tsq"], data["leg_tsq"], tuple(data["terms"]), tuple(data["weights"]))


def _text_record(text: retrieval.TextQuery) -> dict:
    return {"tsq": text.tsq, "leg_tsq": text.leg_tsq, "terms": list(text.terms), "weights": list(text.weights)}


def context_assemble(*, project_id: str, subject_id: str, query: str, budget_tokens: int,
                     config: AssemblyConfig | None = None, rerun: Rerun | None = None) -> dict:
    timer = _Timer()
    warnings: list[str] = []
    config = config or default_config()
    as_of = rerun.as_of if rerun else None
    recorded = rerun.recorded if rerun else {}
    now = as_of or timezone.now()

    qvec = _query_vector(query, warnings)
    timer.lap("embed")

    def select():
        lookup = retrieval.lookup_for(project_id=project_id, subject_id=subject_id, query=query, now=now,
                                      cutoffs=volatility_cutoffs(now), config=config)
        if as_of is not None:
            # The words' weights came from pg_stats at the call's time: the recorded ones, when the trace has them.
            lookup = replace(lookup, fact_text=_text_query(recorded.get("fact_text")) or lookup.fact_text,
                             event_text=_text_query(recorded.get("event_text")) or lookup.event_text)
            memory: Memory = MemoryAsOf(verdicts=rerun.verdicts, entity_freq=recorded.get("entity_freq", {}))
            consented = (frozenset(recorded["consented"]) if recorded["consented"] is not None else None) \
                if "consented" in recorded else consent_gate(project_id=project_id, subject_id=subject_id)
        else:
            memory = Memory()
            consented = consent_gate(project_id=project_id, subject_id=subject_id)
        facts = memory.facts(lookup, qvec)
        timer.lap("retrieve")
        episodes = memory.episodes(lookup, qvec)
        decided = rank_candidates(facts, episodes, config)
        timer.lap("episodes")

        packable, floor_hits = block(decided, config.max_distance, consented)
        # Facts and episodes compete on one score for one budget. The specification packs facts first and gives episodes
        # only what is left; on the quality harness that served no episode at all once a scope held ~900
        # tokens of facts (evidence recall of "when" questions: 0.00), see docs/quality.md.
        # A share of the budget waits for multi-hop: filled greedily, the first pass always spent it all and the
        # second hop never got in. What multi-hop does not use goes back to the first pass's ranking below.
        reserve = int(budget_tokens * config.multi_hop_share)
        budget_left = pack(packable, budget_tokens - reserve, ReasonCode.INCLUDED) + reserve
        timer.lap("pack")

        budget_left = multi_hop(lookup, query, decided, budget_left, consented, memory, config)
        leftovers = [d for d in packable if d.reason == ReasonCode.OVER_BUDGET]
        budget_left = pack(leftovers, budget_left, ReasonCode.INCLUDED)
        timer.lap("multi_hop")
        return lookup, memory, consented, decided, budget_left, floor_hits

    # Every read of a live call may go to a read replica that holds the scope's latest writes (hakimem/db_router.py);
    # the trace below is written on the primary. A replay reads on the primary.
    if rerun is None:
        lookup, memory, consented, decided, budget_left, floor_hits = reads_for_scope(
            select, written_sql=SCOPE_WRITTEN_SQL, params={"project_id": project_id, "subject_id": subject_id})
    else:
        lookup, memory, consented, decided, budget_left, floor_hits = select()

    served = [d for d in decided if d.reason in _SERVED]
    served.sort(key=lambda d: (d.reason != ReasonCode.INCLUDED, d.rank))
    facts_out = [packet_fact(d) for d in served if d.item_type == ItemType.FACT]
    episodes_out = [packet_episode(d) for d in served if d.item_type == ItemType.EPISODE]
    warnings += _warnings_for_blocked(decided)
    empty_reason = EmptyReason.NO_RELEVANT_MEMORY if not served and floor_hits else None
    status = TraceStatus.DEGRADED if warnings else TraceStatus.OK
    used_tokens = budget_tokens - budget_left
    rendered = render_packet(facts_out, episodes_out)
    timer.lap("render")

    packet = {
        "trace_id": str(uuid.uuid4()),
        "status": str(status),
        "facts": facts_out,
        "episodes": episodes_out,
        "warnings": warnings,
        "empty_reason": str(empty_reason) if empty_reason else None,
        "budget_tokens": budget_tokens,
        "used_tokens": used_tokens,
        "rendered": rendered,
    }
    # What the call used that the store does not version, so that a replay as it was can use it again
    # (context/replay.py): the configuration, the words' weights, the consents read, the names' frequencies.
    inputs = {
        "config": config.as_dict(), "fact_text": _text_record(lookup.fact_text),
        "event_text": _text_record(lookup.event_text),
        "consented": sorted(consented) if consented is not None else None, "entity_freq": memory.entity_freq,
    }
    _record(packet, decided, timer, project_id=project_id, subject_id=subject_id, query=query, now=now,
            inputs=inputs, rerun=rerun)
    return packet


def _record(packet: dict, decided: list[Decided], timer: _Timer, *, project_id, subject_id, query, now, inputs,
            rerun: Rerun | None) -> None:
    """The trace of the call and one decision row per candidate, in one statement."""
    trace_record(
        trace={
            "id": packet["trace_id"], "project_id": project_id, "subject_id": subject_id, "query": query,
            "budget_tokens": packet["budget_tokens"], "used_tokens": packet["used_tokens"], "status": packet["status"],
            "empty_reason": packet["empty_reason"], "warnings": packet["warnings"], "rendered": packet["rendered"],
            "facts_served": len(packet["facts"]), "episodes_served": len(packet["episodes"]), "candidates": len(decided),
            "embedder": settings.HAKI_EMBED_PROVIDER, "timings": dict(timer.marks), "latency_ms": timer.total(),
            # a replay as it was is dated at the original call's time (its recency is computed there), so the
            # replay's own trace is stamped with its real time: now.
            "created_at": timezone.now() if rerun and rerun.as_of else now, "inputs": inputs,
            "replay_of": str(rerun.replay_of) if rerun else None, "replay": rerun.marks if rerun else None,
        },
        decisions=_decision_rows(decided),
    )
