from __future__ import annotations

from django.db import connection

from traces.models import Trace


def trace_get(*, project_id: str, trace_id) -> Trace | None:
    return Trace.objects.filter(project_id=project_id, id=trace_id).first()


def trace_decisions(*, trace: Trace) -> list[dict]:
    """Every decision of the trace with the item's text, facts first then episodes, each by rank."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT d.item_type, coalesce(d.fact_id, d.event_id) AS item_id, d.decision, d.reason_code, d.rank,
                   d.score, d.similarity, d.cosine_distance, d.text_rank, d.recency, d.tokens, d.entity,
                   coalesce(f.text, e.text) AS text
              FROM traces_decision d
              LEFT JOIN facts_fact f ON f.id = d.fact_id
              LEFT JOIN facts_event e ON e.id = d.event_id
             WHERE d.trace_id = %(trace_id)s
             ORDER BY d.item_type DESC, d.rank
            """,
            {"trace_id": trace.id},
        )
        names = [c.name for c in cursor.description]
        return [dict(zip(names, row)) for row in cursor.fetchall()]
