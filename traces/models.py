"""One Trace per context call and one Decision per item the assembler considered: what it served, what it
left out and why. Curators read them to answer "why was (or wasn't) this fact served?"; stats aggregate them.
"""
from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q

from facts.models import Event, Fact, IdentityBlock, Procedure
from hakimem.validators import SCOPE_ID_MAX


class TraceStatus(models.TextChoices):
    OK = "ok"
    DEGRADED = "degraded"


class EmptyReason(models.TextChoices):
    NO_RELEVANT_MEMORY = "no_relevant_memory"


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


DECISION_OF_REASON = {
    ReasonCode.INCLUDED: DecisionKind.INCLUDED,
    ReasonCode.MULTI_HOP_EXPANSION: DecisionKind.INCLUDED,
    ReasonCode.OVER_BUDGET: DecisionKind.EXCLUDED,
    ReasonCode.BELOW_RELEVANCE_FLOOR: DecisionKind.EXCLUDED,
    ReasonCode.CONFLICT_OPEN: DecisionKind.BLOCKED,
    ReasonCode.VOLATILITY_EXPIRED: DecisionKind.BLOCKED,
    ReasonCode.CONSENT_MISSING: DecisionKind.BLOCKED,
}


class ItemType(models.TextChoices):
    FACT = "fact"
    EPISODE = "episode"
    PROCEDURE = "procedure"
    IDENTITY = "identity"  # an identity block


# The sections of a tiered call (issue 15), as a decision records them; '' for a call that asks for no tiers.
TIER_MAX = 16


_ITEM_COLUMNS = ("fact", "event", "procedure", "identity_block")


def _one_item(item_type: str, column: str) -> Q:
    """A decision of `item_type` names its item in `column` and in no other item column."""
    return Q(item_type=item_type, **{f"{c}__isnull": c != column for c in _ITEM_COLUMNS})


class Trace(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project_id = models.CharField(max_length=SCOPE_ID_MAX)
    subject_id = models.CharField(max_length=SCOPE_ID_MAX)
    query = models.TextField()
    budget_tokens = models.PositiveIntegerField()
    used_tokens = models.PositiveIntegerField()
    status = models.CharField(max_length=16, choices=TraceStatus.choices)
    empty_reason = models.CharField(max_length=32, choices=EmptyReason.choices, null=True, blank=True)
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
            models.CheckConstraint(name="trace_used_within_budget", condition=Q(used_tokens__lte=models.F("budget_tokens"))),
        ]

    def __str__(self) -> str:
        return f"trace {str(self.id)[:8]} {self.subject_id}: {self.query[:40]}"


class Decision(models.Model):
    # db_index=False on the three foreign keys: the indexes in Meta serve their lookups, and each redundant
    # index cost every context call ~130 more index inserts (trace write of 136 rows: 5.3 -> 3.5 ms).
    # No database constraint on the trace either: PostgreSQL checks it once per decision row, ~150 trigger
    # calls per context call (~1 ms of server CPU, docs/performance.md), for rows that are only ever written
    # with their trace in one statement (traces.services.trace_record) and deleted with it (traces_erase,
    # traces_prune); the ORM still deletes a trace's decisions with it (on_delete).
    trace = models.ForeignKey(Trace, on_delete=models.CASCADE, related_name="decisions", db_index=False,
                              db_constraint=False)
    # Its trace's project, copied by the trace writer: row-level security filters decisions on it directly.
    # Through the trace instead (a subquery per policy check), the stats overview of 200k decisions took 3x
    # as long under row security (hashed subplan, no parallel scan).
    project_id = models.CharField(max_length=SCOPE_ID_MAX)
    item_type = models.CharField(max_length=16, choices=ItemType.choices)
    # No database constraint on these two: PostgreSQL checks a foreign key by taking FOR KEY SHARE on the
    # referenced row, so every context call would lock (and dirty the pages of) the ~130 facts it merely
    # considered, contending with writers. Facts and events are only ever deleted by subject erasure,
    # which deletes the decisions first (facts.services.subject_erase, traces.services.traces_erase), and
    # no decision naming an erased row is written after it (traces.services.TRACE_INSERT_SQL).
    fact = models.ForeignKey(
        Fact, null=True, blank=True, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False,
        related_name="decisions",
    )
    event = models.ForeignKey(
        Event, null=True, blank=True, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False,
        related_name="decisions",
    )
    # Procedures, like facts, are retracted rather than deleted, and erased with their scope (subject or project:
    # a project-wide one goes with its project). An identity block is deleted by its DELETE: the decisions that
    # served it keep its id, the record of what a call served (the trace's `rendered` holds its text anyway).
    procedure = models.ForeignKey(
        Procedure, null=True, blank=True, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False,
        related_name="decisions",
    )
    identity_block = models.ForeignKey(
        IdentityBlock, null=True, blank=True, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False,
        related_name="decisions",
    )
    # Database default: the bulk loaders (scripts/bench_stats.py) name only the columns they know.
    tier = models.CharField(max_length=TIER_MAX, blank=True, default="", db_default="",
                            help_text="The section of a tiered call the item was packed for; empty for a plain call.")
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

    class Meta:
        indexes = [
            models.Index(name="traces_decision_trace_rank", fields=["trace", "item_type", "rank"]),
            models.Index(name="traces_decision_fact", fields=["fact", "decision"]),
            # partial: ~95% of decisions are about facts and hold no event
            models.Index(name="traces_decision_event", fields=["event"], condition=Q(event__isnull=False)),
        ]
        constraints = [
            models.CheckConstraint(
                name="decision_one_item",
                condition=_one_item("fact", "fact") | _one_item("episode", "event") | _one_item("procedure", "procedure")
                | _one_item("identity", "identity_block"),
            ),
            models.CheckConstraint(name="decision_kind_valid", condition=Q(decision__in=DecisionKind.values)),
            models.CheckConstraint(name="decision_reason_valid", condition=Q(reason_code__in=ReasonCode.values)),
        ]
