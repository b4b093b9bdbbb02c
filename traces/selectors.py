from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from django.db.models import Count

from facts.models import Event, Fact
from hakimem.db import fetch_dicts, with_tables
from traces.models import Decision, DecisionKind, Trace


def trace_get(*, project_id: str, trace_id) -> Trace | None:
    return Trace.objects.filter(project_id=project_id, id=trace_id).first()


# The item's text is in the facts app's tables, named from its models.
TRACE_DECISIONS_SQL = with_tables(
    """
    SELECT d.item_type, coalesce(d.fact_id, d.event_id) AS item_id, d.decision, d.reason_code, d.rank,
           d.score, d.similarity, d.cosine_distance, d.text_rank, d.recency, d.tokens, d.entity,
           coalesce(f.text, e.text) AS text
      FROM traces_decision d
      LEFT JOIN {fact} f ON f.id = d.fact_id
      LEFT JOIN {event} e ON e.id = d.event_id
     WHERE d.trace_id = %(trace_id)s
     ORDER BY d.item_type DESC, d.rank
    """,
    fact=Fact,
    event=Event,
)


def trace_decisions(*, trace: Trace) -> list[dict]:
    """Every decision of the trace with the item's text, facts first then episodes, each by rank."""
    return fetch_dicts(TRACE_DECISIONS_SQL, {"trace_id": trace.id})


@dataclass(frozen=True)
class DecisionCount:
    decision: str  # included | excluded | blocked
    total: int
    reasons: list[tuple[str, int]]  # (reason_code, count), most frequent first


def fact_decision_counts(*, fact_ids) -> dict:
    """For each fact, how many context calls included, excluded and blocked it, and why: fact id ->
    [DecisionCount for included, excluded, blocked]. A trace holds at most one decision per fact, so
    counts of decisions are counts of context calls.

    -- uses: traces_decision_fact (fact_id, decision)
    """
    tally: dict = defaultdict(lambda: defaultdict(dict))
    rows = (
        Decision.objects.filter(fact_id__in=list(fact_ids))
        .values("fact_id", "decision", "reason_code")
        .annotate(n=Count("id"))
        .order_by()
    )
    for row in rows:
        tally[row["fact_id"]][row["decision"]][row["reason_code"]] = row["n"]
    return {
        fact_id: [
            DecisionCount(
                decision=kind.value,
                total=sum(tally[fact_id][kind.value].values()),
                reasons=sorted(tally[fact_id][kind.value].items(), key=lambda item: (-item[1], item[0])),
            )
            for kind in DecisionKind
        ]
        for fact_id in fact_ids
    }
