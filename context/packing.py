"""Packing a context call's candidates under its budget: what each decision is, what the budget has left, the
greedy pass and the multi-hop pass (context/assembler.py runs them, plain or by tier).

The budget counts what is rendered (context/render.py): a packet never exceeds budget_tokens once rendered.
"""

from __future__ import annotations

from dataclasses import dataclass

from context import render, retrieval
from context.candidates import Candidate
from context.config import AssemblyConfig, CallOptions
from context.entities import extract_entities
from context.memory import Memory
from context.multi_hop import MULTI_HOP_MAX_ENTITIES
from context.render import Layout
from context.scoring import estimate_tokens, hybrid_score
from traces.models import SERVED_REASONS, ItemType, ReasonCode

# A name held by more of the facts table than this links nothing: in a chat stored turn by turn the speakers'
# names are in every fact, and the hop brought back the newest turns that name them (docs/quality.md).
MULTI_HOP_MAX_ENTITY_FREQUENCY = retrieval.LEXICAL_MAX_TERM_FREQUENCY

# In a tiered call a fact of this importance or more renders among the preferences, whatever its kind (seed 003:
# "entries of high importance marked as preferences"). Importance defaults to 0.5: only facts a client marked as
# weighty reach it.
PREFERENCE_MIN_IMPORTANCE = 0.8

# Decisions a multi-hop pass never revisits: already served, or blocked.
SETTLED = (ReasonCode.INCLUDED, ReasonCode.CONFLICT_OPEN, ReasonCode.VOLATILITY_EXPIRED, ReasonCode.CONSENT_MISSING)

# A turn ending in one of these asks; its answer is the next turn, which often shares no word with the query.
QUESTION_MARKS = ("?", "\uff1f")  # "?" and the full-width one


@dataclass
class Decided:
    """One candidate of the call and what became of it."""

    item: object  # candidates.Candidate or candidates.EpisodeCandidate
    item_type: str  # ItemType
    rank: int
    tokens: int
    reason: str = ""
    entity: str = ""  # the shared name that brought it back, for multi-hop
    by_item: object = None  # superseded_in_context: the newer fact that won
    section: str = ""  # where it renders (context.render: preferences, facts, episodes, ...)
    line: str = ""  # its line in `rendered` (context/render.py)
    follows: Decided | None = None  # neighbouring_turn: the served question it answers, rendered just before it


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
        return (
            len(decided.line)
            + 1
            + (0 if decided.section in self.opened else self.layout.section_chars(decided.section))
        )

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


def tier_budgets(total: Budget, options: CallOptions) -> dict[str, Budget]:
    return {tier: Budget(4 * options.tier_budgets[tier], total.layout, parent=total) for tier in render.TIERS}


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
    return Decided(
        item=item,
        item_type=item_type,
        rank=rank,
        tokens=estimate_tokens(item.text),
        section=section,
        line=layout.line(section, item),
        **kw,
    )


def without_consent(item, consented: frozenset[str] | None) -> bool:
    """A fact whose category its subject does not consent to, in a project that requires consent. Episodes
    and procedures carry no consent gate."""
    return consented is not None and isinstance(item, Candidate) and item.category not in consented


def pack(items: list[Decided], budget: Budget, fits_reason: str, neighbours: Neighbours | None = None) -> None:
    """Greedy in the given order; an item that does not fit is excluded and smaller ones after it may still fit.
    An item served already is left as it is. With `neighbours`, an episode served (or found served) as included that
    ends in a question has its next turn offered to the budget right after it."""
    for d in items:
        if d.reason not in SERVED_REASONS:
            d.reason = fits_reason if budget.take(d) else ReasonCode.OVER_BUDGET
        if neighbours is not None and d.reason == ReasonCode.INCLUDED:
            neighbours.offer(d, budget)


class Neighbours:
    """The neighbouring turn: a chat stored turn by turn as events puts a question and its answer in two episodes,
    and the answer, which holds the evidence, often shares no word with the query. When an episode that ends in a
    question is served, the scope's next event is served beside it if it fits (neighbouring_turn), as multi-hop
    does for facts: whatever its own rank, under the relevance floor or not a candidate at all (then traced as a
    decision of its own, over_budget when it does not fit). No chain: the answer's own next turn is not offered.
    The next turns of all the call's packable questions are read in one statement, at the first question served."""

    def __init__(self, lookup, decided: list[Decided], items: list[Decided], memory: Memory, config: AssemblyConfig):
        self.lookup, self.decided, self.memory, self.config = lookup, decided, memory, config
        self.questions = {
            d.item.id: d
            for d in items
            if d.item_type == ItemType.EPISODE and d.item.text.rstrip().endswith(QUESTION_MARKS)
        }
        self.next: dict | None = None  # question id -> EpisodeCandidate, read at the first offer
        self.by_id = {d.item.id: d for d in decided if d.item_type == ItemType.EPISODE}

    def offer(self, question: Decided, budget: Budget) -> None:
        if question.item.id not in self.questions:
            return
        if self.next is None:
            self.next = self.memory.next_turns(self.lookup, list(self.questions))
        turn = self.next.get(question.item.id)
        if turn is None:  # the scope's last event
            return
        d = self.by_id.get(turn.id)
        if d is None:
            turn.score = hybrid_score(None, 0.0, turn.recency, self.config)
            d = candidate_decision(
                turn, ItemType.EPISODE, len(self.decided) + 1, budget.layout, reason=ReasonCode.OVER_BUDGET
            )
            self.decided.append(d)
            self.by_id[turn.id] = d
        if d.reason in SERVED_REASONS:
            return
        if budget.take(d):  # else it keeps its reason: a candidate is still decided in its turn
            d.reason, d.follows = ReasonCode.NEIGHBOURING_TURN, question


def pack_with_multi_hop(
    lookup: retrieval.Lookup,
    query: str,
    decided: list[Decided],
    items: list[Decided],
    budget: Budget,
    reserve_tokens: int,
    consented,
    memory: Memory,
    config: AssemblyConfig,
    timer,
    neighbours: Neighbours | None = None,
) -> None:
    """The facts' pass: a share of the budget waits for multi-hop. Filled greedily, the first pass always spent it
    all and the second hop never got in; what multi-hop does not use goes back to the first pass's ranking (with the
    neighbouring turns of the questions served that did not fit then)."""
    reserve = 4 * int(reserve_tokens * config.multi_hop_share)
    budget.left -= reserve
    pack(items, budget, ReasonCode.INCLUDED, neighbours)
    budget.left += reserve
    timer.lap("pack")
    multi_hop(lookup, query, decided, budget, consented, memory, config)
    pack(items, budget, ReasonCode.INCLUDED, neighbours)
    timer.lap("multi_hop")


def multi_hop(
    lookup: retrieval.Lookup,
    query: str,
    decided: list[Decided],
    budget: Budget,
    consented: frozenset[str] | None = None,
    memory: Memory | None = None,
    config: AssemblyConfig | None = None,
) -> None:
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
    entities = extract_entities(
        [d.item.text for d in included],
        query,
        MULTI_HOP_MAX_ENTITIES,
        too_common=lambda name: memory.name_freq(name, lookup.project_id) > MULTI_HOP_MAX_ENTITY_FREQUENCY,
    )
    settled = [d.item.id for d in facts if d.reason in SETTLED]
    by_id = {d.item.id: d for d in facts}
    hop_decided = []
    for entity, c in memory.hop(lookup, entities, settled):
        if without_consent(c, consented):
            if c.id not in by_id:  # traced like a first-pass candidate, never served
                c.score = hybrid_score(None, 0.0, c.recency, config)
                d = candidate_decision(
                    c,
                    ItemType.FACT,
                    len(decided) + 1,
                    layout,
                    section,
                    reason=ReasonCode.CONSENT_MISSING,
                    entity=entity,
                )
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
