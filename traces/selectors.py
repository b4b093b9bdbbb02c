from __future__ import annotations

import time
import uuid
from collections import defaultdict
from dataclasses import dataclass

from django.db import connection
from django.db.models import Count

from facts.models import Event, Fact, IdentityBlock, Procedure
from hakimem.db import decay_sql, fetch_dicts, with_tables
from hakimem.db_router import read_connection
from hakimem.serializers import iso
from traces.models import TRACE_PENDING_KEY, ACCESS_TAU_SECONDS, Decision, DecisionKind, ItemAccess, Trace

# The access count at which the access signal is one half: access_score(count) = count / (count + ACCESS_HALF).
# Five servings in about the last month (ACCESS_TAU_DAYS): an item served once scores 0.17, one served in
# most calls of an active conversation (20 and more) 0.8 and up, never above 1, so a single hot item cannot
# outweigh the relevance signals however often it was served.
ACCESS_HALF = 5.0


# How long a reader waits for a trace whose writing is under way (traces.models.TRACE_PENDING_KEY): a write takes
# milliseconds; this bounds a reader's wait on a server too busy to finish it.
TRACE_WRITE_WAIT_SECONDS = 2.0
_POLL_SECONDS = 0.005

# True while another connection holds the trace's pending lock (a shared probe, let go at once).
_PENDING_SQL = (
    "SELECT CASE WHEN pg_try_advisory_lock_shared(" + TRACE_PENDING_KEY + ")"
    " THEN NOT pg_advisory_unlock_shared(" + TRACE_PENDING_KEY + ") ELSE true END"
)


def trace_get(*, project_id: str, trace_id, wait_for_pending: bool = False) -> Trace | None:
    """The project's trace, or None. With wait_for_pending, a trace not found while its call is still writing it
    (the answer was sent a few milliseconds ago) is waited for, at most TRACE_WRITE_WAIT_SECONDS; an id nobody is
    writing answers at once."""
    trace_id = str(uuid.UUID(str(trace_id)))
    deadline = time.monotonic() + TRACE_WRITE_WAIT_SECONDS
    while True:
        trace = Trace.objects.filter(project_id=project_id, id=trace_id).first()
        if trace is not None or not wait_for_pending:
            return trace
        with connection.cursor() as cursor:
            cursor.execute(_PENDING_SQL, {"trace_id": trace_id})
            pending = cursor.fetchone()[0]
        if not pending:  # never written, or committed between the two reads: the writer commits, then lets go
            return Trace.objects.filter(project_id=project_id, id=trace_id).first()
        if time.monotonic() >= deadline:
            return None
        time.sleep(_POLL_SECONDS)


# The item's text is in the facts app's tables, named from its models. A procedure shows its title and its
# steps; an identity block deleted since the call has no text left ('').
TRACE_DECISIONS_SQL = with_tables(
    """
    SELECT d.item_type, coalesce(d.fact_id, d.event_id, d.procedure_id, d.identity_block_id) AS item_id, d.decision,
           d.reason_code, d.rank, d.score, d.similarity, d.cosine_distance, d.text_rank, d.recency, d.tokens, d.entity,
           d.tier, d.superseded_by, coalesce(f.text, e.text, x.title || ': ' || x.text, b.text, '') AS text
      FROM traces_decision d
      LEFT JOIN {fact} f ON f.id = d.fact_id AND f.project_id = d.project_id
      LEFT JOIN {event} e ON e.id = d.event_id AND e.project_id = d.project_id
      LEFT JOIN {procedure} x ON x.id = d.procedure_id AND x.project_id = d.project_id
      LEFT JOIN {identity_block} b ON b.id = d.identity_block_id AND b.project_id = d.project_id
     WHERE d.trace_id = %(trace_id)s AND d.project_id = %(project_id)s
     ORDER BY array_position(ARRAY['identity', 'fact', 'episode', 'procedure'], d.item_type::text), d.rank
    """,
    fact=Fact,
    event=Event,
    procedure=Procedure,
    identity_block=IdentityBlock,
)


def trace_decisions(*, trace: Trace) -> list[dict]:
    """Every decision of the trace with the item's text, in the order of the prompt's sections: identity blocks,
    facts, episodes, procedures, each by rank."""
    return fetch_dicts(TRACE_DECISIONS_SQL, {"trace_id": trace.id, "project_id": trace.project_id})


def trace_inspect(*, trace: Trace) -> dict:
    """Everything GET /v1/inspect shows of a trace (the MCP server's `inspect` tool shows the same): the
    request, the packet, timings and every decision with its score parts."""
    decisions = trace_decisions(trace=trace)
    return {
        "trace_id": str(trace.id),
        "created_at": iso(trace.created_at),
        "request": {
            "project_id": trace.project_id,
            "subject_id": trace.subject_id,
            "query": trace.query,
            "budget_tokens": trace.budget_tokens,
        },
        "packet": {
            "status": trace.status,
            "empty_reason": trace.empty_reason,
            "empty_details": trace.empty_details,
            "warnings": trace.warnings,
            "used_tokens": trace.used_tokens,
            "facts_served": trace.facts_served,
            "episodes_served": trace.episodes_served,
            "candidates": trace.candidates,
            "rendered": trace.rendered,
        },
        "replay_of": str(trace.replay_of) if trace.replay_of else None,
        "replay": trace.replay,
        "embedder": trace.embedder,
        "timings_ms": trace.timings,
        "latency_ms": trace.latency_ms,
        "decisions": [
            {
                "item_type": d["item_type"],
                "item_id": str(d["item_id"]),
                "text": d["text"],
                "decision": d["decision"],
                "reason_code": d["reason_code"],
                "rank": d["rank"],
                "score": d["score"],
                "score_parts": {
                    "similarity": d["similarity"],
                    "cosine_distance": d["cosine_distance"],
                    "text_rank": d["text_rank"],
                    "recency": d["recency"],
                },
                "tokens": d["tokens"],
                "entity": d["entity"] or None,
                "tier": d["tier"] or None,
                "superseded_by": str(d["superseded_by"]) if d["superseded_by"] else None,
            }
            for d in decisions
        ],
    }


@dataclass(frozen=True)
class DecisionCount:
    decision: str  # included | excluded | blocked
    total: int
    reasons: list[tuple[str, int]]  # (reason_code, count), most frequent first


def fact_decision_counts(*, fact_ids) -> dict:
    """For each fact, how many context calls included, excluded and blocked it, and why: fact id ->
    [DecisionCount for included, excluded, blocked]. A trace holds at most one decision per fact, so
    counts of decisions are counts of context calls. Replays (context/replay.py) are not counted.

    -- uses: traces_decision_fact (fact_id, decision), then traces_trace_pkey for each decision's trace
    """
    tally: dict = defaultdict(lambda: defaultdict(dict))
    rows = (
        Decision.objects.filter(fact_id__in=list(fact_ids), trace__replay_of__isnull=True)  # replays are no calls
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


# Per context call: the candidates' access counts, one probe of the primary key (project_id, subject_id,
# item_id) per id.
# -- uses: traces_itemaccess_pkey
ACCESS_FREQUENCY_SQL = with_tables(
    """
    SELECT a.item_id, a.count * """
    + decay_sql("%(now)s::timestamptz", "a.at", "tau")
    + """
      FROM {item_access} a
     WHERE a.project_id = %(project_id)s AND a.subject_id = %(subject_id)s AND a.item_id = ANY(%(item_ids)s::uuid[])
    """,
    item_access=ItemAccess,
)


def access_frequency(*, project_id: str, subject_id: str, item_ids, now) -> dict:
    """How often each item was served by past context calls, each serving decayed by exp(-age / ACCESS_TAU_DAYS),
    as of `now`: {item id (as given): count}, 0.0 for an item never served. One query. A `now` before an
    item's last serving counts it as of that serving (the counts are not versioned: a replay as the memory stood
    reads today's)."""
    asked = {str(i): i for i in item_ids}
    counts = dict.fromkeys(asked.values(), 0.0)
    if not asked:
        return counts
    with read_connection().cursor() as cursor:  # a live call's reads may go to a replica (hakimem/db_router.py)
        cursor.execute(
            ACCESS_FREQUENCY_SQL,
            {
                "project_id": project_id,
                "subject_id": subject_id,
                "item_ids": list(asked),
                "now": now,
                "tau": ACCESS_TAU_SECONDS,
            },
        )
        for item_id, count in cursor.fetchall():
            counts[asked[str(item_id)]] = float(count)
    return counts


def access_score(count: float) -> float:
    """An access count (access_frequency) as a signal in [0, 1): count / (count + ACCESS_HALF), 0 for an item
    never served."""
    return count / (count + ACCESS_HALF) if count > 0 else 0.0


def access_signal(*, project_id: str, subject_id: str, item_ids, now) -> dict:
    """The access frequency signal of each item, in [0, 1): access_score of its access_frequency as of `now`;
    {item id (as given): signal}, 0.0 for an item never served. One query."""
    counts = access_frequency(project_id=project_id, subject_id=subject_id, item_ids=item_ids, now=now)
    return {item_id: access_score(count) for item_id, count in counts.items()}
