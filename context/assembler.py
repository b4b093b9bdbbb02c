"""POST /v1/context: assemble the ContextPacket and record why every considered item was or was not served.

context_assemble runs these steps, each a function below that returns what the next one needs (the trace's timings
name them):
 1. embed      the query (LRU-cached), on a thread of its own while memory_to_read makes the reads the candidates
               need besides its vector (consent, a large scope's word counts): the store as it is, or for a replay
               as it was the store at the call's time (context/memory.py). A failing embedder or a degenerate vector
               switches to the degraded path: full-text rank and recency only, with a warning.
 2. retrieve   candidates_read: facts by phase 1 (dense top-K by hnsw or an exact sort ∪ lexical top-K by GIN) and
               phase 2 (hybrid score on the union), and the same two phases over the scope's events
               (context/retrieval.py). Hard filters are in the SQL. A plain call gets both in one round trip, cut
               there to its candidate limit (CANDIDATE_LIMIT unless it asks); a call that scores in Python (tiers,
               category boosts) gets each table's best (a small scope's every row in one statement), its procedures
               and the access counts of all its candidates.
 3. rank       rank_candidates: facts and episodes ranked together; the candidate limit of both are the candidates.
 4. block      block (context/blocking.py): no consent to their category, open conflict, expired volatility, the
               relevance floor and the call's min_score. The weights, tau, floor, phase-1 widths and multi-hop share
               are one AssemblyConfig (context/config.py): today's constants for a call, overridable by a replay.
 5. pack       pack_plain: the rest in descending score while they fit the budget, a share held back for multi-hop
               (facts sharing an entity with the facts served, by full text, one hop), then what it left goes back
               to the ranking (context/packing.py); a served episode that ends in a question has the next turn
               served just after it when it fits (packing.Neighbours, neighbouring_turn). The budget counts what is
               rendered (context/render.py).
 6. why_empty  a call that served nothing says why (empty_reason, empty_details; context/blocking.py); it reads
               the store for it only when it found no candidate at all.
 7. render     the packet (context/packet.py); then replay_inputs, what a replay as it was needs of the call.
 8. trace      one trace row and one decision row per candidate, in one statement.

A tiered call (CallOptions.tiers, seed 003) ranks with five signals (importance and access frequency added) and is
packed by pack_by_tier: it drops the older of two contradicting candidate facts for the call
(superseded_in_context), ranks the procedures and reads the identity blocks ("tiers" in the timings), then packs each
tier under its own budget inside the call's total: identity, preferences, facts (with multi-hop), episodes (with a
question's next turn), procedures ("pack_tiers"). A plain call asks for none of it and is answered as seed 000 says.
Every read runs in reads_for_scope: on a read replica holding the scope's latest writes, else on the primary.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime

from django.conf import settings
from django.utils import timezone

from context import contradictions, render, retrieval
from context.blocking import Empty, block, why_empty
from context.config import PLAIN, AssemblyConfig, CallOptions, default_config
from context.memory import Memory, MemoryAsOf
from context.packet import packet_build
from context.packing import (
    Budget,
    Decided,
    Neighbours,
    candidate_decision,
    pack,
    pack_with_multi_hop,
    tier_budgets,
)
from context.render import Layout
from context.scoring import hybrid_score, rank_order, same_sitting_lift, same_stamp_lift, tiered_score
from facts.conflicts import contradiction_propose
from facts.selectors import SCOPE_WRITTEN_SQL, consent_gate, volatility_cutoffs
from hakimem import telemetry
from hakimem.db_router import reads_for_scope
from hakimem.embeddings import EmbedderUnavailable, get_embedder, is_degenerate
from traces.models import SERVED_REASONS, ItemType, ReasonCode
from traces.services import DecisionRow, trace_record

logger = logging.getLogger("hakimem.context")

WARNING_EMBEDDER_UNAVAILABLE = "embedder_unavailable"
WARNING_DEGENERATE_VECTOR = "degenerate_query_vector"

# Who proposes a pair found contradictory at query time to curators (the conflict set's opener).
CONTRADICTION_ACTOR = "system:context"


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


@dataclass(frozen=True)
class Call:
    """One context call: its scope, question, budget and asks, the configuration it runs with and its clock (a
    replay as it was runs at the original call's time)."""

    project_id: str
    subject_id: str
    query: str
    budget_tokens: int
    config: AssemblyConfig
    options: CallOptions
    rerun: Rerun | None
    now: datetime
    layout: Layout


@dataclass(frozen=True)
class MemoryToRead:
    """Step 1: where the call's candidates come from, what it asks of each table, and the consent gate."""

    lookup: retrieval.Lookup
    memory: Memory
    consented: frozenset[str] | None  # None: the project requires no consent


@dataclass(frozen=True)
class Candidates:
    """Step 2: what the call read; for a tiered call also its procedures and each item's access frequency."""

    facts: list
    episodes: list
    procedures: list
    access: dict

    def facts_and_episodes(self) -> list[tuple]:
        # Facts and episodes compete on one ranking (seed 000 ranks facts only and gives episodes what is left).
        return [(c, ItemType.FACT) for c in self.facts] + [(e, ItemType.EPISODE) for e in self.episodes]


@dataclass(frozen=True)
class Packed:
    """Step 5: every decision of the call (the trace's rows, in their order), the budget they were packed under and
    a tiered call's budget per tier; the contradicting pairs found among its candidates (tiered calls)."""

    decided: list[Decided]
    total: Budget
    tiers: dict[str, Budget] | None = None
    contradictions: list = field(default_factory=list)


@dataclass(frozen=True)
class Assembled:
    """What the reads of one call decided (steps 1 to 6), all made on one connection (reads_for_scope)."""

    read: MemoryToRead
    found: Candidates
    packed: Packed
    empty: Empty


def context_assemble(
    *,
    project_id: str,
    subject_id: str,
    query: str,
    budget_tokens: int,
    config: AssemblyConfig | None = None,
    rerun: Rerun | None = None,
    options: CallOptions = PLAIN,
    write_trace: Callable[[Callable[[], None]], None] | None = None,
) -> dict:
    """The ContextPacket for one call, and its trace. The trace is written before returning, unless `write_trace`
    is given: it then gets the writing, to run when it chooses (the API runs it once the response is sent,
    context/apis.py)."""
    with telemetry.span(
        "hakimem.context",
        project_id=project_id,
        budget_tokens=budget_tokens,
        tiered=options.tiers,
        replay=rerun is not None,
    ) as span:
        return _assemble(
            project_id=project_id,
            subject_id=subject_id,
            query=query,
            budget_tokens=budget_tokens,
            config=config,
            rerun=rerun,
            options=options,
            write_trace=write_trace,
            span=span,
        )


def _assemble(*, project_id, subject_id, query, budget_tokens, config, rerun, options, write_trace, span) -> dict:
    # The call's span gets one child per lap of the timer: the phases its trace times, the same boundaries.
    timer, warnings = _Timer(on_lap=span.phase if span.recording else None), []
    call = Call(
        project_id=project_id,
        subject_id=subject_id,
        query=query,
        budget_tokens=budget_tokens,
        config=config or default_config(),
        options=options,
        rerun=rerun,
        now=(rerun.as_of if rerun else None) or timezone.now(),
        layout=Layout(tiered=options.tiers, fmt=options.render_format),
    )
    # The query is embedded on a thread of its own while memory_to_read makes the reads the candidates statement waits
    # for besides the vector: onnxruntime and a database round trip both let go of the GIL.
    embedding = _embedding_thread().submit(_query_vector, query, project_id, warnings)
    reads = functools.partial(assembled_read, call, embedding, timer)
    # A live call's reads may go to a read replica that holds the scope's latest writes (hakimem/db_router.py); the
    # trace, and a contradiction proposed to curators, are written on the primary. A replay reads on the primary.
    done = (
        reads()
        if rerun is not None
        else reads_for_scope(
            reads, written_sql=SCOPE_WRITTEN_SQL, params={"project_id": project_id, "subject_id": subject_id}
        )
    )
    if done.packed.contradictions and rerun is None:
        _contradictions_propose(call, done.packed.contradictions)
    packet = packet_build(
        decided=done.packed.decided,
        layout=call.layout,
        options=options,
        budget_tokens=budget_tokens,
        warnings=warnings,
        empty_reason=done.empty.reason,
        empty_details=done.empty.details,
        tiers=done.packed.tiers,
    )
    timer.lap("render")
    if span.recording:
        _span_set(span, packet, done.packed.decided)
    record = functools.partial(
        _record, call, packet, done.packed.decided, timer, replay_inputs(call, done.read, done.found.access), span
    )
    if write_trace is None:
        record()
    else:
        write_trace(record)
    return packet


def assembled_read(call: Call, embedding: Future, timer: _Timer) -> Assembled:
    """Steps 1 to 6, every read of the call on one connection: the memory to read and the query's vector, the
    candidates, their ranking, what is blocked, the packing, and why an empty call came back empty."""
    read = memory_to_read(call)
    qvec = embedding.result()
    timer.lap("embed")
    found = candidates_read(call, read, qvec)
    timer.lap("retrieve")
    ranked = rank_candidates(found.facts_and_episodes(), call.config, call.layout, call.options, found.access)
    timer.lap("rank")
    packable = block(ranked, call.config.max_distance, read.consented, call.options.min_score)
    packed = (
        pack_by_tier(call, read, found, ranked, packable, timer)
        if call.options.tiers
        else pack_plain(call, read, ranked, packable, timer)
    )
    return Assembled(read, found, packed, empty_reason(call, read, packed, timer))


def _contradictions_propose(call: Call, pairs: list) -> None:
    # Without waiting for the scope's writers: a context call never queues behind a batch of fact writes; a pair
    # not proposed now is proposed by manage.py consolidate from the trace.
    contradiction_propose(
        project_id=call.project_id, subject_id=call.subject_id, pairs=pairs, actor=CONTRADICTION_ACTOR, wait=False
    )


def _span_set(span, packet: dict, decided: list[Decided]) -> None:
    span.set(
        trace_id=packet["trace_id"],
        status=str(packet["status"]),
        used_tokens=packet["used_tokens"],
        empty_reason=str(packet["empty_reason"]) if packet["empty_reason"] else None,
        candidates=len(decided),
        facts_served=len(packet["facts"]),
        episodes_served=len(packet["episodes"]),
        warnings=len(packet["warnings"]),
    )


# --- 1. the memory to read, and the query's vector -------------------------------------------------------------


def memory_to_read(call: Call) -> MemoryToRead:
    """The store as it is; for a replay as it was, the store at the call's time with what the call recorded of the
    rest: the words' weights (read from pg_stats at the call's time), the consents, names' frequencies and access."""
    lookup = retrieval.lookup_for(
        project_id=call.project_id,
        subject_id=call.subject_id,
        query=call.query,
        now=call.now,
        cutoffs=volatility_cutoffs(call.now),
        config=call.config,
        candidate_limit=call.options.candidate_limit,
    )
    if call.rerun is None or call.rerun.as_of is None:
        return MemoryToRead(lookup, Memory(), consent_gate(project_id=call.project_id, subject_id=call.subject_id))
    recorded = call.rerun.recorded
    lookup = replace(
        lookup,
        fact_text=_text_query(recorded.get("fact_text")) or lookup.fact_text,
        event_text=_text_query(recorded.get("event_text")) or lookup.event_text,
        procedure_text=_text_query(recorded.get("procedure_text")) or lookup.procedure_text,
    )
    memory = MemoryAsOf(
        verdicts=call.rerun.verdicts, entity_freq=recorded.get("entity_freq", {}), access=recorded.get("access", {})
    )
    if "consented" not in recorded:
        return MemoryToRead(lookup, memory, consent_gate(project_id=call.project_id, subject_id=call.subject_id))
    consented = recorded["consented"]
    return MemoryToRead(lookup, memory, frozenset(consented) if consented is not None else None)


@functools.cache
def _embedding_thread() -> ThreadPoolExecutor:
    """This process's one thread for embedding queries, made on first use: a gunicorn worker's own, after the fork
    (the application is not preloaded: config/gunicorn.py)."""
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="hakimem-embed")


def _query_vector(query: str, project_id: str, warnings: list[str]):
    try:
        vector = get_embedder().embed_query(query, project_id=project_id)
    except EmbedderUnavailable as exc:
        logger.warning("context: embedder unavailable, degraded to full-text and recency (%s)", exc)
        warnings.append(WARNING_EMBEDDER_UNAVAILABLE)
        return None
    if is_degenerate(vector):
        logger.warning("context: degenerate query vector, degraded to full-text and recency")
        warnings.append(WARNING_DEGENERATE_VECTOR)
        return None
    return vector


# --- 2. the candidates, 3. their ranking (4. what is blocked: context/blocking.py) ------------------------------


def candidates_read(call: Call, read: MemoryToRead, qvec) -> Candidates:
    """A call scored by the hybrid score alone gets its facts and episodes from one statement, already cut to its
    candidates; a tiered call or one with category boosts scores them in Python, from both tables' best, and reads
    the access counts of all its candidates at once (its fifth signal)."""
    tiered, memory, lookup = call.options.tiers, read.memory, read.lookup
    facts, episodes = memory.candidates(lookup, qvec, together=not tiered and not call.options.category_boosts)
    procedures = memory.procedures(lookup, qvec) if tiered else []
    access = memory.access(lookup, [i.id for i in (*facts, *episodes, *procedures)]) if tiered else {}
    return Candidates(facts, episodes, procedures, access)


def _score(item, config: AssemblyConfig, options: CallOptions, access: dict) -> float:
    score = hybrid_score(item.similarity, item.text_rank, item.recency, config)
    if options.tiers:
        score = tiered_score(score, getattr(item, "importance", None), access.get(item.id, 0.0), config)
    return score * options.category_boosts.get(getattr(item, "category", None), 1.0)


def rank_candidates(
    pool: list[tuple], config: AssemblyConfig, layout: Layout, options: CallOptions, access: dict
) -> list[Decided]:
    """`pool`'s (item, item type) on one score, best first (ties: scoring.rank_order), cut to the call's
    candidate limit: the candidates, each with its rank. A plain call scores with seed 000's three signals; a tiered
    one adds importance and access frequency; either multiplies by the call's category boosts."""
    for item, _ in pool:
        item.score = _score(item, config, options, access)
    same_sitting_lift([item for item, kind in pool if kind == ItemType.EPISODE], config)
    same_stamp_lift([item for item, kind in pool if kind == ItemType.FACT], config)
    pool = sorted(pool, key=lambda p: rank_order(p[0]))
    limit = options.candidate_limit or retrieval.CANDIDATE_LIMIT
    return [candidate_decision(item, kind, i + 1, layout) for i, (item, kind) in enumerate(pool[:limit])]


# --- 5. packing, plain or by tier --------------------------------------------------------------------------------


def pack_plain(call: Call, read: MemoryToRead, ranked: list[Decided], packable: list[Decided], timer) -> Packed:
    """Facts and episodes on one score for one budget. The specification packs facts first and gives episodes only
    what is left: that served no episode at all once a scope held ~900 tokens of facts (docs/quality.md)."""
    total = Budget.of_tokens(call.budget_tokens, call.layout)
    pack_with_multi_hop(
        read.lookup,
        call.query,
        ranked,
        packable,
        total,
        call.budget_tokens,
        read.consented,
        read.memory,
        call.config,
        timer,
        Neighbours(read.lookup, ranked, packable, read.memory, call.config),
    )
    return Packed(ranked, total)


def pack_by_tier(
    call: Call, read: MemoryToRead, found: Candidates, ranked: list[Decided], packable: list[Decided], timer
) -> Packed:
    """Seed 003's packing: contradictions settled for the call, procedures ranked and blocked, identity blocks read;
    then each tier under its own budget inside the call's total. Identity blocks are never ranked nor gated: in
    their order, while their tier has room."""
    options, layout = call.options, call.layout
    packable, pairs = _contradictions_in_context(packable, project_id=call.project_id, subject_id=call.subject_id)
    procedures = rank_candidates(
        [(p, ItemType.PROCEDURE) for p in found.procedures], call.config, layout, options, found.access
    )
    packable_procedures = block(procedures, call.config.max_distance, read.consented, options.min_score)
    identity = [
        candidate_decision(b, ItemType.IDENTITY, i + 1, layout)
        for i, b in enumerate(read.memory.identity(call.project_id, call.subject_id))
    ]
    decided = identity + ranked + procedures
    timer.lap("tiers")
    total = Budget.of_tokens(call.budget_tokens, layout)
    tiers = tier_budgets(total, options)
    pack(identity, tiers[render.IDENTITY], ReasonCode.INCLUDED)
    pack([d for d in packable if d.section == render.PREFERENCES], tiers[render.PREFERENCES], ReasonCode.INCLUDED)
    pack_with_multi_hop(
        read.lookup,
        call.query,
        decided,
        [d for d in packable if d.section == render.FACTS],
        tiers[render.FACTS],
        options.tier_budgets[render.FACTS],
        read.consented,
        read.memory,
        call.config,
        timer,
    )
    episodes = [d for d in packable if d.section == render.EPISODES]
    neighbours = Neighbours(read.lookup, decided, episodes, read.memory, call.config)
    pack(episodes, tiers[render.EPISODES], ReasonCode.INCLUDED, neighbours)
    pack(packable_procedures, tiers[render.PROCEDURES], ReasonCode.INCLUDED)
    timer.lap("pack_tiers")
    return Packed(decided, total, tiers, pairs)


def _contradictions_in_context(packable: list[Decided], *, project_id, subject_id) -> tuple[list[Decided], list]:
    """Seed 003's pass before packing: of two candidate facts that contradict each other, the newer is served and
    the older excluded for this call (superseded_in_context, naming the winner). Returns the packable others and
    the pairs found, which the call then proposes to curators under the project's curator policy (manage.py
    consolidate applies the rest)."""
    facts = [d for d in packable if d.item_type == ItemType.FACT]
    found = contradictions.find_contradictions(
        project_id=project_id, subject_id=subject_id, candidates=[d.item for d in facts]
    )
    if not found:
        return packable, []
    losers = contradictions.losers(found)  # each loser with its most similar winner
    for d in facts:
        if d.item.id in losers:
            d.reason, d.by_item = ReasonCode.SUPERSEDED_IN_CONTEXT, losers[d.item.id].winner_id
    return [d for d in packable if d.reason != ReasonCode.SUPERSEDED_IN_CONTEXT], found


# --- 6. why a call came back empty ------------------------------------------------------------------------------


def empty_reason(call: Call, read: MemoryToRead, packed: Packed, timer) -> Empty:
    """Empty() for a call that served something; else why_empty's answer."""
    if any(d.reason in SERVED_REASONS for d in packed.decided):
        return Empty()
    empty = why_empty(
        packed.decided,
        total=packed.total,
        tiers=packed.tiers,
        options=call.options,
        config=call.config,
        scope=lambda: read.memory.scope_state(read.lookup),
    )
    timer.lap("why_empty")
    return empty


# --- 7. what a replay needs, 8. the trace -----------------------------------------------------------------------


def replay_inputs(call: Call, read: MemoryToRead, access: dict) -> dict:
    """What the call used that the store does not version, so that a replay as it was can use it again
    (context/replay.py): the configuration, the words' weights, the consents read, the names' frequencies, and
    for a call that asked for more than a plain one, its options and the access frequencies it read."""
    lookup = read.lookup
    inputs = {
        "config": call.config.as_dict(),
        "fact_text": _text_record(lookup.fact_text),
        "event_text": _text_record(lookup.event_text),
        "procedure_text": _text_record(lookup.procedure_text),
        "consented": sorted(read.consented) if read.consented is not None else None,
        "entity_freq": read.memory.entity_freq,
    }
    if lookup.stats_version is not None:  # which of the planner's statistics weighed the words (retrieval.StatsVersion)
        inputs["table_stats"] = lookup.stats_version.as_dict()
    if lookup.scope_words:  # why the lexical legs fetched the words they did, in a scope with its own counts
        inputs["scope_words"] = {
            table: {"items": w.items, "counts": w.counts, "unlisted_max": w.unlisted_max}
            for table, w in lookup.scope_words.items()
        }
    if call.options != PLAIN:
        inputs["options"] = call.options.as_dict()
    if access:
        inputs["access"] = {str(k): v for k, v in access.items() if v}
    return inputs


def _text_query(data: dict | None) -> retrieval.TextQuery | None:
    if data is None:
        return None
    return retrieval.TextQuery(
        data["tsq"], data["leg_tsq"], tuple(data["terms"]), tuple(data["weights"]), tuple(data.get("kept", ()))
    )


def _text_record(text: retrieval.TextQuery) -> dict:
    return {
        "tsq": text.tsq,
        "leg_tsq": text.leg_tsq,
        "terms": list(text.terms),
        "weights": list(text.weights),
        "kept": list(text.kept),
    }


@dataclass
class _Timer:
    marks: dict = field(default_factory=dict)
    start: float = field(default_factory=time.perf_counter)
    last: float = 0.0
    on_lap: Callable[[str, float, float], None] | None = None  # (phase, its start, its end): the call's span

    def __post_init__(self):
        self.last = self.start

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.marks[name] = round((now - self.last) * 1000, 3)
        if self.on_lap is not None:
            self.on_lap(name, self.last, now)
        self.last = now

    def total(self) -> float:
        return round((time.perf_counter() - self.start) * 1000, 3)


def _record(call: Call, packet: dict, decided: list[Decided], timer: _Timer, inputs: dict, span) -> None:
    """The trace of the call and one decision row per candidate, in one statement; a span of its own, child of the
    call's (which has ended when the trace is written after the response)."""
    with telemetry.span(
        "hakimem.context.trace_write", parent=span, trace_id=packet["trace_id"], project_id=call.project_id
    ):
        _trace_write(call, packet, decided, timer, inputs)


def _trace_write(call: Call, packet: dict, decided: list[Decided], timer: _Timer, inputs: dict) -> None:
    rerun = call.rerun
    trace_record(
        trace={
            "id": packet["trace_id"],
            "project_id": call.project_id,
            "subject_id": call.subject_id,
            "query": call.query,
            "budget_tokens": packet["budget_tokens"],
            "used_tokens": packet["used_tokens"],
            "status": packet["status"],
            "empty_reason": packet["empty_reason"],
            "empty_details": packet["empty_details"],
            "warnings": packet["warnings"],
            "rendered": packet["rendered"],
            "facts_served": len(packet["facts"]),
            "episodes_served": len(packet["episodes"]),
            "candidates": len(decided),
            "embedder": settings.HAKI_EMBED_PROVIDER,
            "timings": dict(timer.marks),
            "latency_ms": timer.total(),
            # a replay as it was is dated at the original call's time (its recency is computed there), so the
            # replay's own trace is stamped with its real time: now.
            "created_at": timezone.now() if rerun and rerun.as_of else call.now,
            "inputs": inputs,
            "replay_of": str(rerun.replay_of) if rerun else None,
            "replay": rerun.marks if rerun else None,
        },
        decisions=_decision_rows(decided, call.options.tiers),
    )


def _decision_rows(decided: list[Decided], tiered: bool) -> list[DecisionRow]:
    return [
        DecisionRow(
            item_type=d.item_type,
            item_id=d.item.id,
            reason_code=d.reason,
            rank=d.rank,
            score=getattr(d.item, "score", None),
            similarity=getattr(d.item, "similarity", None),
            cosine_distance=getattr(d.item, "distance", None),
            text_rank=getattr(d.item, "text_rank", None),
            recency=getattr(d.item, "recency", None),
            tokens=d.tokens,
            entity=d.entity,
            tier=d.section if tiered else "",
            by_item=d.by_item,
        )
        for d in decided
    ]
