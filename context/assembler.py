"""POST /v1/context: assemble the ContextPacket and record why every considered item was or was not served.

Pipeline (each step is named in the trace's timings):
 1. embed      the query (LRU-cached), on a thread of its own while the reads the candidates need besides its
               vector are made (consent, a large scope's word counts); a failing embedder or a degenerate vector
               switches to the degraded path: full-text rank and recency only, with a warning.
 2. retrieve   facts: phase 1 (dense top-K by hnsw or an exact sort ∪ lexical top-K by GIN) and phase 2
               (hybrid score on the union), and the same two phases over the scope's events (context/retrieval.py).
               Hard filters are in the SQL. A plain call gets both in one round trip, cut there to its candidate
               limit (CANDIDATE_LIMIT unless it asks); a call that scores in Python (tiers, category boosts) gets
               each table's best, its procedures and the access counts of all its candidates.
 3. rank       facts and episodes ranked together; the candidate limit of both are the call's candidates.
 4. pack       blocked facts out (no consent to their category, open conflict, expired volatility), the
               relevance floor and the call's min_score out, then the rest in descending score while they fit the
               budget, a share held back for multi-hop. The budget counts what is rendered (Budget,
               context/render.py). The weights, tau, floor, phase-1 widths and multi-hop share are one
               AssemblyConfig (context/config.py): today's constants for a call, overridable by a replay.
 5. multi_hop  if budget remains: facts sharing an entity with the facts served, by full text, one hop; then
               what it left goes back to the ranking.
 6. trace      one trace row and one decision row per candidate, in one statement. A call that served nothing
               says why (empty_reason, empty_details: why_empty); it reads the store for it only when it found no
               candidate at all.

A tiered call (CallOptions.tiers, seed 003) ranks with five signals (importance and access frequency added), and
between 4 and 5: drops the older of two contradicting candidate facts for the call (superseded_in_context), ranks
the procedures and reads the identity blocks ("tiers" in the timings), then packs each tier under
its own budget inside the call's total: identity, preferences, facts (with multi-hop), episodes, procedures
("pack_tiers"). A plain call asks for none of it and is answered as seed 000 says.
Every read runs in reads_for_scope: on a read replica holding the scope's latest writes, else on the primary.
"""
from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from django.conf import settings
from django.utils import timezone

from context import contradictions, render, retrieval, retrieval_asof
from context.config import PLAIN, AssemblyConfig, CallOptions, default_config
from context.entities import extract_entities
from context.render import Layout
from context.scoring import estimate_tokens, hybrid_score, rank_order, tiered_score
from context.serializers import packet_episode, packet_fact, packet_identity, packet_procedure
from facts import selectors as fact_selectors
from facts import services as fact_services
from facts.selectors import SCOPE_WRITTEN_SQL, consent_gate, volatility_cutoffs
from hakimem.db_router import reads_for_scope
from hakimem.embeddings import EmbedderUnavailable, get_embedder, is_degenerate
from traces.models import EmptyReason, ItemType, ReasonCode, TraceStatus, trace_id_new
from traces import selectors as trace_selectors
from traces.services import DecisionRow, trace_record

logger = logging.getLogger("hakimem.context")

WARNING_EMBEDDER_UNAVAILABLE = "embedder_unavailable"
WARNING_DEGENERATE_VECTOR = "degenerate_query_vector"

# The multi-hop share of the budget, like the weights and widths, is a field of context.config.AssemblyConfig
# (default MULTI_HOP_BUDGET_SHARE there), so that a replay can override it.

# A name held by more of the facts table than this links nothing: in a chat stored turn by turn the speakers'
# names are in every fact, and the hop brought back the newest turns that name them (docs/quality.md).
MULTI_HOP_MAX_ENTITY_FREQUENCY = retrieval.LEXICAL_MAX_TERM_FREQUENCY

# In a tiered call a fact of this importance or more renders among the preferences, whatever its kind (seed 003:
# "entries of high importance marked as preferences"). Importance defaults to 0.5: only facts a client marked as
# weighty reach it.
PREFERENCE_MIN_IMPORTANCE = 0.8

# Who proposes a pair found contradictory at query time to curators (the conflict set's opener).
CONTRADICTION_ACTOR = "system:context"

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
    by_item: object = None  # superseded_in_context: the newer fact that won
    section: str = ""  # where it renders (context.render: preferences, facts, episodes, ...)
    line: str = ""  # its line in `rendered` (context/render.py)


class Budget:
    """What is left of a call's budget, in characters of `rendered` (context/render.py): packing in characters and
    reporting estimate_tokens(rendered) is exact, where summing per-item token estimates would let the rendered block
    overrun by the lines' remainders. A section's header is paid by the first item that opens it. A tier's budget
    (tiered calls) is a child: an item takes from it and from the call's total."""

    def __init__(self, chars: int, layout: Layout, parent: Budget | None = None):
        self.left = chars
        self.layout = layout
        self.parent = parent
        self.opened: set[str] = parent.opened if parent else set()

    @classmethod
    def of_tokens(cls, tokens: int, layout: Layout) -> Budget:
        # estimate_tokens(rendered) = len(rendered) // 4 <= tokens while len(rendered) + 1 <= 4 * tokens + 4 (each
        # line is counted with its newline, the last one's included); the wrapper is paid up front.
        return cls(4 * tokens + 4 - layout.wrapper_chars(), layout)

    def room(self) -> int:
        return min(self.left, self.parent.room()) if self.parent else self.left

    def cost(self, decided: Decided) -> int:
        # the line and its newline, and the section's header and closing tag if the item is the first of its section
        return len(decided.line) + 1 + (0 if decided.section in self.opened else self.layout.section_chars(decided.section))

    def take(self, decided: Decided) -> bool:
        cost = self.cost(decided)
        if cost > self.room():
            return False
        budget = self
        while budget is not None:
            budget.left -= cost
            budget = budget.parent
        self.opened.add(decided.section)
        return True


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


def section_of(item, item_type: str, tiered: bool) -> str:
    """Where a candidate renders: episodes apart; a fact of kind preference (in a tiered call also one of high
    importance) in the preferences section; procedures and identity blocks in their own."""
    if item_type == ItemType.FACT:
        if item.kind == "preference" or (tiered and item.importance >= PREFERENCE_MIN_IMPORTANCE):
            return render.PREFERENCES
        return render.FACTS
    if item_type == ItemType.EPISODE:
        return render.EPISODES
    return render.PROCEDURES if item_type == ItemType.PROCEDURE else render.IDENTITY


def candidate_decision(item, item_type: str, rank: int, layout: Layout, section: str | None = None, **kw) -> Decided:
    section = section or section_of(item, item_type, layout.tiered)
    return Decided(item=item, item_type=item_type, rank=rank, tokens=estimate_tokens(item.text), section=section,
                   line=layout.line(section, item), **kw)


def _score(item, config: AssemblyConfig, options: CallOptions, access: dict) -> float:
    score = hybrid_score(item.similarity, item.text_rank, item.recency, config)
    if options.tiers:
        score = tiered_score(score, getattr(item, "importance", None), access.get(item.id, 0.0), config)
    return score * options.category_boosts.get(getattr(item, "category", None), 1.0)


def rank_candidates(pool: list[tuple], config: AssemblyConfig, layout: Layout, options: CallOptions,
                    access: dict) -> list[Decided]:
    """`pool`'s (item, item type) on one score, best first (ties: scoring.rank_order), cut to the call's
    candidate limit: the candidates, each with its rank. A plain call scores with seed 000's three signals; a tiered
    one adds importance and access frequency; either multiplies by the call's category boosts."""
    for item, _ in pool:
        item.score = _score(item, config, options, access)
    pool = sorted(pool, key=lambda p: rank_order(p[0]))
    limit = options.candidate_limit or retrieval.CANDIDATE_LIMIT
    return [candidate_decision(item, kind, i + 1, layout) for i, (item, kind) in enumerate(pool[:limit])]


def _without_consent(item, consented: frozenset[str] | None) -> bool:
    """A fact whose category its subject does not consent to, in a project that requires consent. Episodes
    and procedures carry no consent gate."""
    return consented is not None and isinstance(item, retrieval.Candidate) and item.category not in consented


def block(ranked: list[Decided], max_distance: float, consented: frozenset[str] | None = None,
          min_score: float = 0.0) -> list[Decided]:
    """Decide the candidates that may not be served (no consent, open conflict, expired volatility, beyond the
    relevance floor, under the call's min_score); returns the others in rank order."""
    packable = []
    for d in ranked:
        item = d.item
        if _without_consent(item, consented):
            d.reason = ReasonCode.CONSENT_MISSING
        elif getattr(item, "in_open_conflict", False):
            d.reason = ReasonCode.CONFLICT_OPEN
        elif getattr(item, "expired", False):
            d.reason = ReasonCode.VOLATILITY_EXPIRED
        elif _beyond_floor(item, max_distance):
            d.reason = ReasonCode.BELOW_RELEVANCE_FLOOR
        elif _below_min_score(item, min_score):
            d.reason = ReasonCode.BELOW_MIN_SCORE
        else:
            packable.append(d)
    return packable


def _beyond_floor(item, max_distance: float) -> bool:
    return max_distance > 0 and getattr(item, "distance", None) is not None and item.distance > max_distance


def _below_min_score(item, min_score: float) -> bool:
    return min_score > 0 and getattr(item, "score", min_score) < min_score


def _relevant(item, max_distance: float, min_score: float) -> bool:
    """Within the relevance floor and the call's min_score. (Identity blocks have neither a distance nor a score:
    never ranked nor gated.)"""
    return not _beyond_floor(item, max_distance) and not _below_min_score(item, min_score)


def pack(items: list[Decided], budget: Budget, fits_reason: str) -> None:
    """Greedy in the given order; an item that does not fit is excluded and smaller ones after it may still fit."""
    for d in items:
        d.reason = fits_reason if budget.take(d) else ReasonCode.OVER_BUDGET


class Memory:
    """Where a call's candidates come from: the store as it is now (the hot path of context/retrieval.py)."""

    def __init__(self):
        self.entity_freq: dict[str, float] = {}  # what multi-hop read of each name's frequency, for the trace
        self.scope_facts: list | None = None  # every active fact of the scope, when the candidates hold them all

    def candidates(self, lookup, qvec, *, together: bool):
        """The call's facts and episodes. `together`: the call ranks them by the hybrid score alone, so one statement
        returns the best of both (retrieval.candidates_together); else one statement each."""
        if together and qvec is not None:
            facts, episodes, whole = retrieval.candidates_together(lookup, qvec=qvec)
            self.scope_facts = facts if whole else None
            return facts, episodes
        return self.facts(lookup, qvec), self.episodes(lookup, qvec)

    def facts(self, lookup, qvec):
        return retrieval.fact_candidates(lookup, qvec=qvec)

    def episodes(self, lookup, qvec):
        return retrieval.episode_candidates(lookup, qvec=qvec)

    def scope_state(self, lookup) -> retrieval.ScopeState:
        """Asked of a call that found no candidate at all only (why_empty)."""
        return retrieval.scope_state(lookup)

    def hop(self, lookup, entities, exclude_ids):
        if self.scope_facts is not None:  # what multi-hop could find is among the candidates already
            return retrieval.multi_hop_within(lookup, entities=entities, scope_facts=self.scope_facts,
                                              exclude_ids=exclude_ids)
        return retrieval.multi_hop_candidates(lookup, entities=entities, exclude_ids=exclude_ids)

    def name_freq(self, name: str, project_id: str | None = None) -> float:
        freq = retrieval.table_stats(retrieval.FACTS, project_id).term_freq.get(name, 0.0)
        self.entity_freq[name] = freq
        return freq

    # Tiered calls only.
    def procedures(self, lookup, qvec):
        return retrieval.procedure_candidates(lookup, qvec=qvec)

    def identity(self, project_id, subject_id):
        return fact_selectors.identity_blocks_for(project_id=project_id, subject_id=subject_id)

    def access(self, lookup, item_ids) -> dict:
        """How often each item was served lately, normalised to [0, 1] (traces.selectors)."""
        return trace_selectors.access_signal(project_id=lookup.project_id, subject_id=lookup.subject_id,
                                             item_ids=item_ids, now=lookup.now)


class MemoryAsOf(Memory):
    """The store as it stood at a past call's time (context/retrieval_asof.py), with what that call recorded
    of the things the store does not version: the names' frequencies and the volatility verdicts."""

    def __init__(self, *, verdicts: dict, entity_freq: dict, access: dict | None = None):
        super().__init__()
        self.verdicts = verdicts
        self.recorded_freq = entity_freq
        self.recorded_access = access or {}

    def candidates(self, lookup, qvec, *, together: bool):
        return self.facts(lookup, qvec), self.episodes(lookup, qvec)  # the as-of statements are one per table

    def facts(self, lookup, qvec):
        if qvec is None:  # the as-of statements have no full-text-only path: a replay as it was needs the vector
            raise EmbedderUnavailable("a replay as it was needs the query's vector")
        return retrieval_asof.fact_candidates_as_of(lookup, qvec=qvec, verdicts=self.verdicts)

    def episodes(self, lookup, qvec):
        return retrieval_asof.episode_candidates_as_of(lookup, qvec=qvec)

    def scope_state(self, lookup) -> retrieval.ScopeState:
        return retrieval_asof.scope_state_as_of(lookup)

    def hop(self, lookup, entities, exclude_ids):
        return retrieval_asof.multi_hop_candidates_as_of(lookup, entities=entities, exclude_ids=exclude_ids,
                                                         verdicts=self.verdicts)

    def name_freq(self, name: str, project_id: str | None = None) -> float:
        if name in self.recorded_freq:
            self.entity_freq[name] = self.recorded_freq[name]
            return self.recorded_freq[name]
        return super().name_freq(name, project_id)

    def access(self, lookup, item_ids) -> dict:
        # What the call read; an item it did not record had none. Identity blocks and procedures are not versioned:
        # a tiered replay as it was reads today's (README, Replay).
        return {i: self.recorded_access[str(i)] for i in item_ids if str(i) in self.recorded_access}


def multi_hop(lookup: retrieval.Lookup, query: str, decided: list[Decided], budget: Budget,
              consented: frozenset[str] | None = None, memory: Memory | None = None,
              config: AssemblyConfig | None = None) -> None:
    """One hop from the facts served to facts that share a name with them, within what budget is left;
    never subject to the relevance floor (its purpose is to bring back evidence far from the query). New
    items are appended to `decided`. In a tiered call what it brings renders among the relevant facts, on the facts
    tier's budget."""
    facts = [d for d in decided if d.item_type == ItemType.FACT]
    included = [d for d in facts if d.reason == ReasonCode.INCLUDED]
    if budget.room() <= 0 or not included:
        return
    memory = memory or Memory()
    layout = budget.layout
    section = render.FACTS if layout.tiered else None
    entities = extract_entities([d.item.text for d in included], query, retrieval.MULTI_HOP_MAX_ENTITIES,
                                too_common=lambda name: memory.name_freq(name, lookup.project_id)
                                > MULTI_HOP_MAX_ENTITY_FREQUENCY)
    settled = [d.item.id for d in facts if d.reason in _SETTLED]
    by_id = {d.item.id: d for d in facts}
    hop_decided = []
    for entity, c in memory.hop(lookup, entities, settled):
        if _without_consent(c, consented):
            if c.id not in by_id:  # traced like a first-pass candidate, never served
                c.score = hybrid_score(None, 0.0, c.recency, config)
                d = candidate_decision(c, ItemType.FACT, len(decided) + 1, layout, section, reason=ReasonCode.CONSENT_MISSING,
                            entity=entity)
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
            d = candidate_decision(c, ItemType.FACT, len(decided) + 1, layout, section, entity=entity)
            decided.append(d)
            by_id[c.id] = d
        hop_decided.append(d)
    pack(hop_decided, budget, ReasonCode.MULTI_HOP_EXPANSION)


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


_BLOCKED = (ReasonCode.CONFLICT_OPEN, ReasonCode.CONSENT_MISSING, ReasonCode.VOLATILITY_EXPIRED)


def why_empty(decided: list[Decided], *, total: Budget, tiers: dict[str, Budget] | None, options: CallOptions,
              config: AssemblyConfig, scope: Callable[[], retrieval.ScopeState]) -> tuple[str, dict | None]:
    """Why a call that served nothing came back empty, and what the reason says in numbers (the packet's
    empty_details). The first that holds, in this order:
    1. budget_too_small: a candidate passed every gate and did not fit; a larger budget would have served it, so
       this comes before what blocked the others. Details: the budget that serves something (fitting_budgets);
    2. all_blocked: some candidate within the relevance floor and min_score was blocked (open conflict, consent,
       expired volatility) and none was left to pack. Details: the blocked candidates per reason code;
    3. no_relevant_memory: there were candidates, and the floor or min_score held back every one not blocked;
    4. no candidate at all: scope_unknown when nothing was ever written for the subject, scope_empty when nothing
       it holds may be served now, else no_relevant_memory (the degraded path's full-text leg matched nothing).
       Only this case reads the store (`scope`, one statement), so that no call with a candidate pays for it."""
    over = [d for d in decided if d.reason == ReasonCode.OVER_BUDGET]
    if over:
        return EmptyReason.BUDGET_TOO_SMALL, fitting_budgets(over, total, tiers, options)
    if decided:
        blocked = [d for d in decided if d.reason in _BLOCKED]
        if any(_relevant(d.item, config.max_distance, options.min_score) for d in blocked):
            counts = {str(code): n for code in _BLOCKED if (n := sum(1 for d in blocked if d.reason == code))}
            return EmptyReason.ALL_BLOCKED, counts
        return EmptyReason.NO_RELEVANT_MEMORY, None
    state = scope()
    if not state.written:
        return EmptyReason.SCOPE_UNKNOWN, None
    return (EmptyReason.NO_RELEVANT_MEMORY if state.servable else EmptyReason.SCOPE_EMPTY), None


def fitting_budgets(over: list[Decided], total: Budget, tiers: dict[str, Budget] | None, options: CallOptions) -> dict:
    """The smallest budget_tokens that serves something, where nothing was served and `over` did not fit: the
    cheapest of them alone, its line and its section's header inside the wrapper (Budget.of_tokens inverted). With
    nothing served no section is open, and the multi-hop share held back is given back to the ranking before the
    call ends, so at that budget the call serves at least that item, and below it nothing. A tiered call names the
    item's tier, and the tier budget it needs when its own is too small; the item is one whose tier budget fits
    it already, when there is one."""
    wrapper = total.layout.wrapper_chars()

    def needs(d: Decided) -> tuple[int, int]:
        cost = total.cost(d)
        return max(1, -(-(cost + wrapper - 4) // 4)), -(-cost // 4)  # (budget_tokens, a tier's budget)

    if tiers is None:
        return {"smallest_fitting_budget": min(needs(d)[0] for d in over)}
    tier_fits = [d for d in over if needs(d)[1] <= options.tier_budgets[d.section]]
    first = min(tier_fits or over, key=lambda d: (needs(d)[0], needs(d)[1]))
    budget, tier_budget = needs(first)
    details = {"smallest_fitting_budget": budget, "tier": first.section}
    if tier_budget > options.tier_budgets[first.section]:
        details["smallest_fitting_tier_budget"] = tier_budget
    return details


def _decision_rows(decided: list[Decided], tiered: bool) -> list[DecisionRow]:
    return [
        DecisionRow(
            item_type=d.item_type, item_id=d.item.id, reason_code=d.reason, rank=d.rank,
            score=getattr(d.item, "score", None), similarity=getattr(d.item, "similarity", None),
            cosine_distance=getattr(d.item, "distance", None), text_rank=getattr(d.item, "text_rank", None),
            recency=getattr(d.item, "recency", None), tokens=d.tokens, entity=d.entity,
            tier=d.section if tiered else "", by_item=d.by_item,
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
    return retrieval.TextQuery(data["tsq"], data["leg_tsq"], tuple(data["terms"]), tuple(data["weights"]),
                               tuple(data.get("kept", ())))


def _text_record(text: retrieval.TextQuery) -> dict:
    return {"tsq": text.tsq, "leg_tsq": text.leg_tsq, "terms": list(text.terms), "weights": list(text.weights),
            "kept": list(text.kept)}


def _pack_with_multi_hop(lookup, query, decided, items, budget: Budget, reserve_tokens: int, consented, memory,
                         config, timer: _Timer) -> None:
    """The facts' pass: a share of the budget waits for multi-hop. Filled greedily, the first pass always spent it
    all and the second hop never got in; what multi-hop does not use goes back to the first pass's ranking."""
    reserve = 4 * int(reserve_tokens * config.multi_hop_share)
    budget.left -= reserve
    pack(items, budget, ReasonCode.INCLUDED)
    budget.left += reserve
    timer.lap("pack")
    multi_hop(lookup, query, decided, budget, consented, memory, config)
    pack([d for d in items if d.reason == ReasonCode.OVER_BUDGET], budget, ReasonCode.INCLUDED)
    timer.lap("multi_hop")


def _contradictions_in_context(packable: list[Decided], *, project_id, subject_id) -> tuple[list[Decided], list]:
    """Seed 003's pass before packing: of two candidate facts that contradict each other, the newer is served and
    the older excluded for this call (superseded_in_context, naming the winner). Returns the packable others and
    the pairs found, which the call then proposes to curators under the project's curator policy (manage.py
    consolidate applies the rest)."""
    facts = [d for d in packable if d.item_type == ItemType.FACT]
    found = contradictions.find_contradictions(project_id=project_id, subject_id=subject_id,
                                               candidates=[d.item for d in facts])
    if not found:
        return packable, []
    losers = contradictions.losers(found)  # each loser with its most similar winner
    for d in facts:
        if d.item.id in losers:
            d.reason, d.by_item = ReasonCode.SUPERSEDED_IN_CONTEXT, losers[d.item.id].winner_id
    return [d for d in packable if d.reason != ReasonCode.SUPERSEDED_IN_CONTEXT], found


def _tier_budgets(total: Budget, options: CallOptions) -> dict[str, Budget]:
    return {tier: Budget(4 * options.tier_budgets[tier], total.layout, parent=total) for tier in render.TIERS}


def _served_lines(served: list[Decided]) -> dict[str, list[str]]:
    lines: dict[str, list[str]] = {}
    for d in served:
        lines.setdefault(d.section, []).append(d.line)
    return lines


def context_assemble(*, project_id: str, subject_id: str, query: str, budget_tokens: int,
                     config: AssemblyConfig | None = None, rerun: Rerun | None = None,
                     options: CallOptions = PLAIN, write_trace: Callable[[Callable[[], None]], None] | None = None) -> dict:
    """The ContextPacket for one call, and its trace. The trace is written before returning, unless `write_trace`
    is given: it then gets the writing, to run when it chooses (the API runs it once the response is sent,
    context/apis.py)."""
    timer = _Timer()
    warnings: list[str] = []
    config = config or default_config()
    as_of = rerun.as_of if rerun else None
    recorded = rerun.recorded if rerun else {}
    now = as_of or timezone.now()
    layout = Layout(tiered=options.tiers, fmt=options.render_format)

    # The query is embedded on a thread of its own while this one makes the reads the candidates statement waits for
    # besides the vector (a read replica's freshness, a large scope's word counts, the consent gate): onnxruntime
    # and a database round trip both let go of the GIL. The "embed" phase ends when the vector is there.
    embedding = _embedding_thread().submit(_query_vector, query, project_id, warnings)

    def select():
        lookup = retrieval.lookup_for(project_id=project_id, subject_id=subject_id, query=query, now=now,
                                      cutoffs=volatility_cutoffs(now), config=config, candidate_limit=options.candidate_limit)
        if as_of is not None:
            # The words' weights came from pg_stats at the call's time: the recorded ones, when the trace has them.
            lookup = replace(lookup, fact_text=_text_query(recorded.get("fact_text")) or lookup.fact_text,
                             event_text=_text_query(recorded.get("event_text")) or lookup.event_text,
                             procedure_text=_text_query(recorded.get("procedure_text")) or lookup.procedure_text)
            memory: Memory = MemoryAsOf(verdicts=rerun.verdicts, entity_freq=recorded.get("entity_freq", {}),
                                        access=recorded.get("access", {}))
            consented = (frozenset(recorded["consented"]) if recorded["consented"] is not None else None) \
                if "consented" in recorded else consent_gate(project_id=project_id, subject_id=subject_id)
        else:
            memory = Memory()
            consented = consent_gate(project_id=project_id, subject_id=subject_id)
        qvec = embedding.result()
        timer.lap("embed")
        # A call scored by the hybrid score alone gets its facts and episodes from one statement, already cut to its
        # candidates; a tiered call or one with category boosts scores them in Python, from both tables' best.
        facts, episodes = memory.candidates(lookup, qvec, together=not options.tiers and not options.category_boosts)
        procedures = memory.procedures(lookup, qvec) if options.tiers else []
        # One read of the access counts for every candidate of a tiered call (its fifth signal).
        access = memory.access(lookup, [i.id for i in (*facts, *episodes, *procedures)]) if options.tiers else {}
        timer.lap("retrieve")
        # Facts and episodes compete on one ranking (seed 000 ranks facts only and gives episodes what is left).
        decided = rank_candidates([(c, ItemType.FACT) for c in facts] + [(e, ItemType.EPISODE) for e in episodes],
                                  config, layout, options, access)
        timer.lap("rank")

        packable = block(decided, config.max_distance, consented, options.min_score)
        # Facts and episodes compete on one score for one budget. The specification packs facts first and gives episodes
        # only what is left; on the quality harness that served no episode at all once a scope held ~900
        # tokens of facts (evidence recall of "when" questions: 0.00), see docs/quality.md.
        total = Budget.of_tokens(budget_tokens, layout)
        tiers, found = None, []
        if options.tiers:
            packable, found = _contradictions_in_context(packable, project_id=project_id, subject_id=subject_id)
            ranked_procedures = rank_candidates([(p, ItemType.PROCEDURE) for p in procedures], config, layout, options,
                                                access)
            packable_procedures = block(ranked_procedures, config.max_distance, consented, options.min_score)
            identity = [candidate_decision(b, ItemType.IDENTITY, i + 1, layout)
                        for i, b in enumerate(memory.identity(project_id, subject_id))]
            decided = identity + decided + ranked_procedures
            timer.lap("tiers")
            tiers = _tier_budgets(total, options)
            # Identity blocks are never ranked nor gated: in their order, while their tier has room.
            pack(identity, tiers[render.IDENTITY], ReasonCode.INCLUDED)
            pack([d for d in packable if d.section == render.PREFERENCES], tiers[render.PREFERENCES], ReasonCode.INCLUDED)
            _pack_with_multi_hop(lookup, query, decided, [d for d in packable if d.section == render.FACTS],
                                 tiers[render.FACTS], options.tier_budgets[render.FACTS], consented, memory, config, timer)
            pack([d for d in packable if d.section == render.EPISODES], tiers[render.EPISODES], ReasonCode.INCLUDED)
            pack(packable_procedures, tiers[render.PROCEDURES], ReasonCode.INCLUDED)
            timer.lap("pack_tiers")
        else:
            _pack_with_multi_hop(lookup, query, decided, packable, total, budget_tokens, consented, memory, config, timer)

        empty = None
        if not any(d.reason in _SERVED for d in decided):
            empty = why_empty(decided, total=total, tiers=tiers, options=options, config=config,
                              scope=lambda: memory.scope_state(lookup))
            timer.lap("why_empty")
        return lookup, memory, consented, decided, empty, tiers, found, access

    # Every read of a live call may go to a read replica that holds the scope's latest writes (hakimem/db_router.py);
    # the trace, and a contradiction proposed to curators, are written on the primary. A replay reads on the primary.
    if rerun is None:
        lookup, memory, consented, decided, empty, tiers, found, access = reads_for_scope(
            select, written_sql=SCOPE_WRITTEN_SQL, params={"project_id": project_id, "subject_id": subject_id})
    else:
        lookup, memory, consented, decided, empty, tiers, found, access = select()
    if found and rerun is None:
        # Without waiting for the scope's writers: a context call never queues behind a batch of fact writes; a pair
        # not proposed now is proposed by manage.py consolidate from the trace.
        fact_services.contradiction_propose(project_id=project_id, subject_id=subject_id, pairs=found,
                                            actor=CONTRADICTION_ACTOR, wait=False)

    served = [d for d in decided if d.reason in _SERVED]
    served.sort(key=lambda d: (d.reason != ReasonCode.INCLUDED, d.rank))  # by section when rendered
    facts_out = [packet_fact(d, layout.tiered) for d in served if d.item_type == ItemType.FACT]
    episodes_out = [packet_episode(d) for d in served if d.item_type == ItemType.EPISODE]
    warnings += _warnings_for_blocked(decided)
    empty_reason, empty_details = empty or (None, None)
    status = TraceStatus.DEGRADED if warnings else TraceStatus.OK
    rendered = layout.render(_served_lines(served))
    used_tokens = estimate_tokens(rendered) if rendered else 0
    timer.lap("render")

    packet = {
        "trace_id": str(trace_id_new()),
        "status": str(status),
        "facts": facts_out,
        "episodes": episodes_out,
        "warnings": warnings,
        "empty_reason": str(empty_reason) if empty_reason else None,
        "empty_details": empty_details,
        "budget_tokens": budget_tokens,
        "used_tokens": used_tokens,
        "rendered": rendered,
    }
    if options.tiers:
        packet["identity"] = [packet_identity(d) for d in served if d.item_type == ItemType.IDENTITY]
        packet["procedures"] = [packet_procedure(d) for d in served if d.item_type == ItemType.PROCEDURE]
        packet["tiers"] = {tier: {"budget_tokens": options.tier_budgets[tier],
                                  "used_tokens": -(-(4 * options.tier_budgets[tier] - b.left) // 4)}
                           for tier, b in tiers.items()}
    if options != PLAIN:
        packet["render_format"] = options.render_format
    # What the call used that the store does not version, so that a replay as it was can use it again
    # (context/replay.py): the configuration, the words' weights, the consents read, the names' frequencies, and
    # for a call that asked for more than a plain one, its options and the access frequencies it read.
    inputs = {
        "config": config.as_dict(), "fact_text": _text_record(lookup.fact_text),
        "event_text": _text_record(lookup.event_text), "procedure_text": _text_record(lookup.procedure_text),
        "consented": sorted(consented) if consented is not None else None, "entity_freq": memory.entity_freq,
    }
    if lookup.stats_version is not None:  # which of the planner's statistics weighed the words (retrieval.StatsVersion)
        inputs["table_stats"] = lookup.stats_version.as_dict()
    if lookup.scope_words:  # why the lexical legs fetched the words they did, in a scope with its own counts
        inputs["scope_words"] = {table: {"items": w.items, "counts": w.counts, "unlisted_max": w.unlisted_max}
                                 for table, w in lookup.scope_words.items()}
    if options != PLAIN:
        inputs["options"] = options.as_dict()
    if access:
        inputs["access"] = {str(k): v for k, v in access.items() if v}
    def record():
        _record(packet, decided, timer, project_id=project_id, subject_id=subject_id, query=query, now=now,
                inputs=inputs, rerun=rerun, tiered=options.tiers)

    if write_trace is None:
        record()
    else:
        write_trace(record)
    return packet


def _record(packet: dict, decided: list[Decided], timer: _Timer, *, project_id, subject_id, query, now, inputs,
            rerun: Rerun | None, tiered: bool) -> None:
    """The trace of the call and one decision row per candidate, in one statement."""
    trace_record(
        trace={
            "id": packet["trace_id"], "project_id": project_id, "subject_id": subject_id, "query": query,
            "budget_tokens": packet["budget_tokens"], "used_tokens": packet["used_tokens"], "status": packet["status"],
            "empty_reason": packet["empty_reason"], "empty_details": packet["empty_details"],
            "warnings": packet["warnings"], "rendered": packet["rendered"],
            "facts_served": len(packet["facts"]), "episodes_served": len(packet["episodes"]), "candidates": len(decided),
            "embedder": settings.HAKI_EMBED_PROVIDER, "timings": dict(timer.marks), "latency_ms": timer.total(),
            # a replay as it was is dated at the original call's time (its recency is computed there), so the
            # replay's own trace is stamped with its real time: now.
            "created_at": timezone.now() if rerun and rerun.as_of else now, "inputs": inputs,
            "replay_of": str(rerun.replay_of) if rerun else None, "replay": rerun.marks if rerun else None,
        },
        decisions=_decision_rows(decided, tiered),
    )
