"""One Trace per context call and one Decision per item the assembler considered: what it served, what it
left out and why. Curators read them to answer "why was (or wasn't) this fact served?"; stats aggregate them.
"""

from __future__ import annotations

import os
import time
import uuid

from django.db import models
from django.db.models import Q

from facts.models import Event, Fact, IdentityBlock, Procedure
from hakimem.validators import SCOPE_ID_MAX


class TraceStatus(models.TextChoices):
    OK = "ok"
    DEGRADED = "degraded"


class EmptyReason(models.TextChoices):
    """Why a context call served nothing (its `rendered` is ""). Every empty call has one, and a call that served
    something has none. context.blocking.why_empty decides it: the first below that holds. The labels are what the
    stats page and the admin show."""

    # Nothing was ever written for the subject in the project: no fact, event, procedure or identity block of its
    # own (the project-wide ones do not make a subject known). An erased subject is unknown again.
    SCOPE_UNKNOWN = "scope_unknown", "unknown subject: nothing was ever written for it"
    # The subject has memory, but none a call may serve now: every fact retracted, superseded or past its
    # valid_to, and no event (a plain call: the subject's procedures and identity blocks alone serve nothing).
    SCOPE_EMPTY = "scope_empty", "nothing to serve: its facts retracted, superseded or no longer valid"
    # A candidate passed every gate but did not fit: the budget (or its tier's) is below the smallest item's cost.
    # The packet's empty_details says which budget would have served something.
    BUDGET_TOO_SMALL = "budget_too_small", "the budget is too small for any item"
    # Every candidate relevant enough to be served (within the relevance floor and min_score) was blocked: by an
    # open conflict, the subject's consent, or expired volatility. empty_details counts them per reason code.
    ALL_BLOCKED = "all_blocked", "everything relevant blocked: open conflict, consent or staleness"
    # Memory exists, but none of it is relevant enough: the relevance floor or the call's min_score excluded
    # every candidate that was not blocked, or the scope's items were not even candidates (the degraded path's
    # full-text leg matched none of them).
    NO_RELEVANT_MEMORY = "no_relevant_memory", "nothing relevant enough to the query"


class DecisionKind(models.TextChoices):
    INCLUDED = "included"
    EXCLUDED = "excluded"
    BLOCKED = "blocked"


class ReasonCode(models.TextChoices):
    INCLUDED = "included"
    MULTI_HOP_EXPANSION = "multi_hop_expansion"
    OVER_BUDGET = "over_budget"
    BELOW_RELEVANCE_FLOOR = "below_relevance_floor"
    CONFLICT_OPEN = "conflict_open"
    VOLATILITY_EXPIRED = "volatility_expired"
    CONSENT_MISSING = "consent_missing"
    # The older of a contradicting pair among the call's candidates; the decision names the newer one
    # (Decision.superseded_by). For this call only: consolidation (manage.py consolidate) applies it to the store.
    SUPERSEDED_IN_CONTEXT = "superseded_in_context"
    BELOW_MIN_SCORE = "below_min_score"  # under the request's min_score
    # The turn after a served episode that ends in a question, served beside it: its answer, seldom near the query.
    NEIGHBOURING_TURN = "neighbouring_turn"


DECISION_OF_REASON = {
    ReasonCode.INCLUDED: DecisionKind.INCLUDED,
    ReasonCode.MULTI_HOP_EXPANSION: DecisionKind.INCLUDED,
    ReasonCode.OVER_BUDGET: DecisionKind.EXCLUDED,
    ReasonCode.BELOW_RELEVANCE_FLOOR: DecisionKind.EXCLUDED,
    ReasonCode.CONFLICT_OPEN: DecisionKind.BLOCKED,
    ReasonCode.VOLATILITY_EXPIRED: DecisionKind.BLOCKED,
    ReasonCode.CONSENT_MISSING: DecisionKind.BLOCKED,
    ReasonCode.SUPERSEDED_IN_CONTEXT: DecisionKind.EXCLUDED,
    ReasonCode.BELOW_MIN_SCORE: DecisionKind.EXCLUDED,
    ReasonCode.NEIGHBOURING_TURN: DecisionKind.INCLUDED,
}
# The reasons that serve their item: what a packet holds and the access frequency counts.
SERVED_REASONS = tuple(reason for reason, kind in DECISION_OF_REASON.items() if kind == DecisionKind.INCLUDED)


class ItemType(models.TextChoices):
    FACT = "fact"
    EPISODE = "episode"
    PROCEDURE = "procedure"
    IDENTITY = "identity"  # an identity block


# The sections of a tiered call, as a decision records them; '' for a call that asks for no tiers.
TIER_MAX = 16


_ITEM_COLUMNS = ("fact", "event", "procedure", "identity_block")


def _one_item(item_type: str, column: str) -> Q:
    """A decision of `item_type` names its item in `column` and in no other item column."""
    return Q(item_type=item_type, **{f"{c}__isnull": c != column for c in _ITEM_COLUMNS})


# A context call's trace is written just after its response is sent (context/apis.py). From before the response
# until its trace is committed, the call's connection holds this session-level advisory lock on the trace id: a
# reader that does not find the trace yet waits for that write only when one is under way
# (traces.selectors.trace_get), and answers any other id at once. The two-key form is a key space of its own,
# apart from the scope and trace locks' single keys; two ids sharing a hash only make a reader wait a write longer.
TRACE_PENDING_CLASS = 0x7472  # "tr"
TRACE_PENDING_KEY = f"{TRACE_PENDING_CLASS}, hashtext(%(trace_id)s)"


def trace_id_new() -> uuid.UUID:
    """A UUIDv7 (RFC 9562): the Unix time in milliseconds in its first 48 bits, then the version, 74 random bits
    and the variant. Ids minted in time order, as traces are written, add to the right end of the traces'
    primary key instead of a random page of it."""
    ms = time.time_ns() // 1_000_000
    random_bits = int.from_bytes(os.urandom(10), "big")
    value = (
        ((ms & 0xFFFF_FFFF_FFFF) << 80)
        | (0x7 << 76)
        | ((random_bits >> 62) & 0xFFF) << 64
        | (0b10 << 62)
        | (random_bits & 0x3FFF_FFFF_FFFF_FFFF)
    )
    return uuid.UUID(int=value)


class Trace(models.Model):
    id = models.UUIDField(primary_key=True, default=trace_id_new, editable=False)
    project_id = models.CharField(max_length=SCOPE_ID_MAX)
    subject_id = models.CharField(max_length=SCOPE_ID_MAX)
    query = models.TextField()
    budget_tokens = models.PositiveIntegerField()
    used_tokens = models.PositiveIntegerField()
    status = models.CharField(max_length=16, choices=TraceStatus.choices)
    empty_reason = models.CharField(max_length=32, choices=EmptyReason.choices, null=True, blank=True)
    # What an empty call's reason says in numbers (the packet's empty_details): budget_too_small, the budgets that
    # would have served something; all_blocked, the blocked candidates per reason code. Null otherwise.
    empty_details = models.JSONField(null=True, blank=True)
    warnings = models.JSONField(default=list)
    rendered = models.TextField(blank=True)
    facts_served = models.PositiveIntegerField(default=0)
    episodes_served = models.PositiveIntegerField(default=0)
    candidates = models.PositiveIntegerField(default=0)
    embedder = models.CharField(max_length=64)
    timings = models.JSONField(default=dict, help_text="milliseconds per phase")
    latency_ms = models.FloatField()
    created_at = models.DateTimeField()
    # What the call used that the memory store does not version (its configuration, the query words' weights
    # read from pg_stats, the consents, the names' frequencies): a replay as it was reads them back.
    inputs = models.JSONField(null=True, blank=True)
    # A replay (POST /v1/inspect/{id}/replay, manage.py replay): the trace it replays, and how ({"as_of",
    # "overrides"}). No foreign key: the original may be pruned before its replay, and both go with their scope's
    # erasure (same project and subject). Replays are left out of every statistic (stats/selectors.py).
    replay_of = models.UUIDField(null=True, blank=True)
    replay = models.JSONField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(name="traces_trace_project_time", fields=["project_id", "created_at"]),
            models.Index(name="traces_trace_scope_time", fields=["project_id", "subject_id", "created_at"]),
        ]
        constraints = [
            models.CheckConstraint(name="trace_status_valid", condition=Q(status__in=TraceStatus.values)),
            models.CheckConstraint(
                name="trace_empty_reason_valid",
                condition=Q(empty_reason__isnull=True) | Q(empty_reason__in=EmptyReason.values),
            ),
            # A call that served something has no empty reason. (The converse, every empty call has one, holds from
            # migration 0014 on; the calls traced before it may have none: stats count them apart.)
            models.CheckConstraint(
                name="trace_empty_reason_only_when_empty", condition=Q(empty_reason__isnull=True) | Q(used_tokens=0)
            ),
            models.CheckConstraint(
                name="trace_used_within_budget", condition=Q(used_tokens__lte=models.F("budget_tokens"))
            ),
        ]

    def __str__(self) -> str:
        return f"trace {str(self.id)[:8]} {self.subject_id}: {self.query[:40]}"


class Decision(models.Model):
    # db_index=False on the three foreign keys: the indexes in Meta serve their lookups, and each redundant
    # index would cost every context call ~130 more index inserts.
    # No database constraint on the trace either: PostgreSQL checks it once per decision row, ~150 trigger
    # calls per context call (~1 ms of server CPU, docs/performance.md), for rows that are only ever written
    # with their trace in one statement (traces.services.trace_record) and deleted with it (traces_erase,
    # traces_prune); the ORM still deletes a trace's decisions with it (on_delete).
    trace = models.ForeignKey(
        Trace, on_delete=models.CASCADE, related_name="decisions", db_index=False, db_constraint=False
    )
    # Its trace's project, copied by the trace writer: row-level security filters decisions on it directly.
    # Through the trace instead (a subquery per policy check), the stats overview of 200k decisions took 3x
    # as long under row security (hashed subplan, no parallel scan).
    project_id = models.CharField(max_length=SCOPE_ID_MAX)
    item_type = models.CharField(max_length=16, choices=ItemType.choices)
    # No database constraint on these two: PostgreSQL checks a foreign key by taking FOR KEY SHARE on the
    # referenced row, so every context call would lock (and dirty the pages of) the ~130 facts it merely
    # considered, contending with writers. Facts and events are only ever deleted by subject erasure,
    # which deletes the decisions first (privacy.services.subject_erase, traces.services.traces_erase), and
    # no decision naming an erased row is written after it (traces.services.TRACE_INSERT_SQL).
    fact = models.ForeignKey(
        Fact,
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,
        related_name="decisions",
    )
    event = models.ForeignKey(
        Event,
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,
        related_name="decisions",
    )
    # Procedures, like facts, are retracted rather than deleted, and erased with their scope (subject or project:
    # a project-wide one goes with its project). An identity block is deleted by its DELETE: the decisions that
    # served it keep its id, the record of what a call served (the trace's `rendered` holds its text anyway).
    procedure = models.ForeignKey(
        Procedure,
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,
        related_name="decisions",
    )
    identity_block = models.ForeignKey(
        IdentityBlock,
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,
        related_name="decisions",
    )
    # Database default: the bulk loaders (scripts/bench_stats.py) name only the columns they know.
    tier = models.CharField(
        max_length=TIER_MAX,
        blank=True,
        default="",
        db_default="",
        help_text="The section of a tiered call the item was packed for; empty for a plain call.",
    )
    decision = models.CharField(max_length=16, choices=DecisionKind.choices)
    reason_code = models.CharField(max_length=32, choices=ReasonCode.choices)
    rank = models.PositiveIntegerField(help_text="1-based position in the scored order (facts and episodes apart)")
    score = models.FloatField(null=True)
    similarity = models.FloatField(null=True)
    cosine_distance = models.FloatField(null=True)
    text_rank = models.FloatField(null=True)
    recency = models.FloatField(null=True)
    tokens = models.PositiveIntegerField()
    entity = models.CharField(max_length=64, blank=True, default="", help_text="multi-hop: the shared name")
    # superseded_in_context: the fact that won the contradiction. No foreign key, as for fact above; no index:
    # only consolidation reads it, through the decisions of that reason (traces_decision_superseded below).
    superseded_by = models.UUIDField(null=True, blank=True, db_index=False)

    class Meta:
        indexes = [
            models.Index(name="traces_decision_trace_rank", fields=["trace", "item_type", "rank"]),
            models.Index(name="traces_decision_fact", fields=["fact", "decision"]),
            # partial: ~95% of decisions are about facts and hold no event
            models.Index(name="traces_decision_event", fields=["event"], condition=Q(event__isnull=False)),
            # Consolidation's reading of the pairs query time decided (context/consolidation.py). Partial: a
            # context call writes an entry here only for a contradiction, none for its ~130 other decisions.
            models.Index(
                name="traces_decision_superseded",
                fields=["project_id", "trace"],
                condition=Q(reason_code="superseded_in_context"),
            ),
        ]
        constraints = [
            models.CheckConstraint(
                name="decision_one_item",
                condition=_one_item("fact", "fact")
                | _one_item("episode", "event")
                | _one_item("procedure", "procedure")
                | _one_item("identity", "identity_block"),
            ),
            models.CheckConstraint(name="decision_kind_valid", condition=Q(decision__in=DecisionKind.values)),
            models.CheckConstraint(name="decision_reason_valid", condition=Q(reason_code__in=ReasonCode.values)),
        ]


# How long a serving counts. 30 days, the recency signal's tau (context.scoring.TAU_DAYS): a fact served every day
# of a month holds a count near 30 x (1 - 1/e) ~ 19, and one served daily for good settles at 30 (the rate times
# tau); a serving weighs half after 21 days (tau x ln 2). A week would forget a weekly routine between two uses;
# a year would let what mattered last spring outrank what matters now.
ACCESS_TAU_DAYS = 30.0
ACCESS_TAU_SECONDS = ACCESS_TAU_DAYS * 86400.0
# Below this decayed count a row is deleted by consolidation (traces.services.item_access_prune): one serving
# about three months old (tau x ln 20), worth 0.01 as a signal (traces.selectors.access_score). Without it the
# table would keep a row for every item ever served.
ACCESS_MIN_COUNT = 0.05


class ItemAccess(models.Model):
    """How often an item (fact, episode) was served by context calls, decayed over time: the access frequency
    signal. One row per item, kept by the trace writer (traces.services.TRACE_INSERT_SQL): each trace that serves
    the item (included, multi_hop_expansion or neighbouring_turn) moves `count` to its value as of the trace's time
    and adds 1. Replays count nothing. `count` is as of `at`; traces.selectors.access_frequency decays it to the caller's
    time. No foreign key, as for decisions: serving an item must not lock it. Erasure deletes the rows with the
    scope's traces (traces.services.traces_erase, traces_erase_naming); pruning traces leaves them (the count
    outlives the calls it sums)."""

    # One row per item: an item id names one item of one scope, so this key is unique on (project_id, item_id)
    # too. The project leads, for a table distributed by project; the subject before the item lets this one
    # index serve every reader: the assembler's probe of a call's ids (traces.selectors.access_frequency), the
    # writer's upsert, a scope's erasure and consolidation's decay. A second index on the scope cost each new
    # row one more index insert for reads that are rare.
    pk = models.CompositePrimaryKey("project_id", "subject_id", "item_id")
    project_id = models.CharField(max_length=SCOPE_ID_MAX)
    subject_id = models.CharField(max_length=SCOPE_ID_MAX)
    item_type = models.CharField(max_length=16, choices=ItemType.choices)
    item_id = models.UUIDField()
    count = models.FloatField(help_text="servings, each decayed by exp(-age / ACCESS_TAU_DAYS), as of `at`")
    at = models.DateTimeField()

    class Meta:
        constraints = [
            models.CheckConstraint(name="itemaccess_count_positive", condition=Q(count__gt=0)),
        ]

    def __str__(self) -> str:
        return f"{self.item_type} {str(self.item_id)[:8]}: {self.count:.2f} as of {self.at:%Y-%m-%d}"
