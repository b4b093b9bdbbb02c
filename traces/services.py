from __future__ import annotations

import json
import logging
import time
import uuid
from dataclasses import dataclass
from datetime import datetime

from django.db import connection

from facts.models import Event, Fact, IdentityBlock, Procedure
from facts.erasure import erase_condition
from hakimem import observability
from hakimem.citus import rows_of_each_shard
from hakimem.db import decay_sql, with_tables
from traces.models import (
    ACCESS_MIN_COUNT,
    ACCESS_TAU_SECONDS,
    DECISION_OF_REASON,
    SERVED_REASONS,
    ItemAccess,
    TRACE_PENDING_KEY,
    trace_id_new,
)

logger = logging.getLogger("hakimem.traces")


@dataclass
class DecisionRow:
    item_type: str  # traces.models.ItemType: fact | episode | procedure | identity
    item_id: object
    reason_code: str
    rank: int
    score: float | None
    similarity: float | None
    cosine_distance: float | None
    text_rank: float | None
    recency: float | None
    tokens: int
    entity: str = ""
    tier: str = ""  # the section a tiered call packed the item for (identity, preferences, ...); '' for a plain call
    by_item: object = None  # superseded_in_context: the id of the fact that won (Decision.superseded_by)


# The scope's trace lock: every trace write shares it, erasure (trace_scope_lock, inside subject_erase's
# transaction: privacy.services) takes it exclusively until it commits. So no trace of a scope commits between the eraser's
# statements (a trace committed between its DELETE of decisions and its DELETE of traces would fail the
# erasure at commit), and a trace write that waited for an erasure sees it. Its own key (seed 1), not the
# writers' lock of facts.locks.lock_scopes (seed 0): context calls must not queue behind a scope's fact
# writes, which hold that lock for as long as a batch takes.
TRACE_LOCK_KEY = "hashtextextended(%(project_id)s || chr(31) || %(subject_id)s, 1)"

# decision (included, excluded, blocked) follows from the reason code: computed by the server, not sent.
_DECISION_OF_REASON_SQL = "CASE d.reason_code {} END".format(
    " ".join(f"WHEN '{reason.value}' THEN '{kind.value}'" for reason, kind in DECISION_OF_REASON.items())
)

# Served decisions count towards their item's access frequency (traces.models.ItemAccess), in the same
# statement: a data-modifying CTE runs to completion whether or not the final INSERT reads it. The count is
# decayed from its row's time to the trace's, or the new serving decayed to the row's time when a call that
# started earlier commits later (a count never grows by decay). Replays are no calls and count nothing; identity
# blocks, served to every tiered call and never ranked, neither.
# Concurrent calls of one scope serve the same items: each upserts its rows in item id order, so two writers
# wait for each other's row locks in the same order and cannot deadlock (two orders would: A holds x and wants
# y while B holds y and wants x). DISTINCT ON keeps one row per item: ON CONFLICT may not touch a row twice.
_ACCESS_UPSERT_SQL = (
    """, a AS (
    INSERT INTO {item_access} AS x (project_id, subject_id, item_type, item_id, count, at)
    SELECT DISTINCT ON (d.item_id) t.project_id, %(subject_id)s, d.item_type, d.item_id, 1, %(created_at)s::timestamptz
      FROM t, d
     WHERE d.reason_code IN ("""
    + ", ".join(f"'{code.value}'" for code in SERVED_REASONS)
    + """)
       AND d.item_type <> 'identity' AND %(replay_of)s::uuid IS NULL
     ORDER BY d.item_id
        ON CONFLICT (project_id, subject_id, item_id) DO UPDATE
       SET count = x.count * """
    + decay_sql("excluded.at", "x.at", "access_tau_seconds")
    + """
                   + """
    + decay_sql("x.at", "excluded.at", "access_tau_seconds")
    + """,
           at = greatest(x.at, excluded.at)
)"""
)

# The trace and all its decisions in one round trip, and in one transaction with the lock: two statements
# sent as one (client-side binding, the simple query protocol runs them as one implicit transaction; inside
# an atomic block, the lock lasts until that block commits). The INSERT is the second statement, so its
# snapshot is taken once the lock is held: a context call that read the scope's facts before an erasure and
# writes after it sees them gone, and writes nothing. Facts, events and procedures are deleted only by erasure,
# which takes a whole scope: a named item that no longer exists means the scope was erased after the call read
# it, and the trace (its `rendered` holds the erased texts, its decisions name deleted rows) must not be written.
# An identity block is also deleted by its own DELETE: a call that served one deleted meanwhile is not traced
# either (rare, and a trace naming a row that no longer exists is the case the check exists to refuse).
#
# The INSERT of the trace is a data-modifying CTE; the decisions arrive as one text, a line per decision and
# tab-separated fields (_decision_lines), split by the server. Cost for 150 decisions, CPU of client + backend
# in one process (docs/performance.md): a dict per decision through json.dumps and jsonb_to_recordset 6.9 ms
# (7.4 with the lock and the existence check); these lines 6.1 ms, 5.2 without the foreign key on the trace.
# Earlier: executemany 6.3 ms; 13 parallel arrays through unnest ~2 ms, ~0.9 ms of it adapting the arrays.
TRACE_INSERT_SQL = with_tables(
    """
SELECT pg_advisory_xact_lock_shared("""
    + TRACE_LOCK_KEY
    + """);
WITH d AS MATERIALIZED (
    SELECT e[1] AS item_type, e[2]::uuid AS item_id, e[3] AS reason_code, e[4]::int AS rank, e[5]::float8 AS score,
           e[6]::float8 AS similarity, e[7]::float8 AS cosine_distance, e[8]::float8 AS text_rank,
           e[9]::float8 AS recency, e[10]::int AS tokens, coalesce(e[11], '') AS entity, coalesce(e[12], '') AS tier,
           e[13]::uuid AS superseded_by
      FROM string_to_table(%(decisions)s, E'\\n') AS line, string_to_array(line, E'\\t', '') AS e
), t AS (
    INSERT INTO traces_trace (id, project_id, subject_id, query, budget_tokens, used_tokens, status, empty_reason,
                              empty_details, warnings, rendered, facts_served, episodes_served, candidates, embedder,
                              timings, latency_ms, created_at, inputs, replay_of, replay)
    SELECT %(id)s::uuid, %(project_id)s, %(subject_id)s, %(query)s, %(budget_tokens)s, %(used_tokens)s, %(status)s,
           %(empty_reason)s, %(empty_details)s::jsonb, %(warnings)s::jsonb, %(rendered)s, %(facts_served)s,
           %(episodes_served)s, %(candidates)s, %(embedder)s, %(timings)s::jsonb, %(latency_ms)s, %(created_at)s::timestamptz,
           %(inputs)s::jsonb, %(replay_of)s::uuid, %(replay)s::jsonb
     WHERE NOT EXISTS (SELECT FROM d WHERE d.item_type = 'fact' AND NOT EXISTS (
                           SELECT FROM {fact} f WHERE f.id = d.item_id AND f.project_id = %(project_id)s))
       AND NOT EXISTS (SELECT FROM d WHERE d.item_type = 'episode' AND NOT EXISTS (
                           SELECT FROM {event} e WHERE e.id = d.item_id AND e.project_id = %(project_id)s))
       AND NOT EXISTS (SELECT FROM d WHERE d.item_type = 'procedure' AND NOT EXISTS (
                           SELECT FROM {procedure} x WHERE x.id = d.item_id AND x.project_id = %(project_id)s))
       AND NOT EXISTS (SELECT FROM d WHERE d.item_type = 'identity' AND NOT EXISTS (
                           SELECT FROM {identity_block} b WHERE b.id = d.item_id AND b.project_id = %(project_id)s))
    RETURNING id, project_id
)"""
    + _ACCESS_UPSERT_SQL
    + """, written AS (
INSERT INTO traces_decision (trace_id, project_id, item_type, fact_id, event_id, procedure_id, identity_block_id,
                             decision, reason_code, rank, score, similarity, cosine_distance, text_rank, recency,
                             tokens, entity, tier, superseded_by)
SELECT t.id, t.project_id, d.item_type, CASE WHEN d.item_type = 'fact' THEN d.item_id END,
       CASE WHEN d.item_type = 'episode' THEN d.item_id END, CASE WHEN d.item_type = 'procedure' THEN d.item_id END,
       CASE WHEN d.item_type = 'identity' THEN d.item_id END, """
    + _DECISION_OF_REASON_SQL
    + """, d.reason_code,
       d.rank, d.score, d.similarity, d.cosine_distance, d.text_rank, d.recency, d.tokens, d.entity, d.tier,
       d.superseded_by
  FROM t, d
RETURNING 1
)
SELECT count(*) FROM written
""",
    fact=Fact,
    event=Event,
    procedure=Procedure,
    identity_block=IdentityBlock,
    item_access=ItemAccess,
)


def _f(value) -> str:
    """A score part as the server reads it: six decimals, as round(value, 6) stored them before (both round
    the exact binary value, so the float8 stored is the same); '' is NULL."""
    return "" if value is None else "%.6f" % value


def _decision_lines(decisions: list[DecisionRow]) -> str:
    """One line per decision, fields separated by tabs. None of them can hold a tab or a line break: item types,
    reason codes, tiers, ids and numbers by construction, entities are names (context.entities.ENTITY_RE)."""
    return "\n".join(
        f"{d.item_type}\t{d.item_id}\t{d.reason_code}\t{d.rank}\t{_f(d.score)}\t{_f(d.similarity)}\t"
        f"{_f(d.cosine_distance)}\t{_f(d.text_rank)}\t{_f(d.recency)}\t{d.tokens}\t{d.entity}\t{d.tier}\t"
        f"{'' if d.by_item is None else d.by_item}"
        for d in decisions
    )


def trace_pending_begin(trace_id) -> None:
    """Say that the trace `trace_id` is about to be written (held by this connection until trace_pending_end)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT pg_advisory_lock({TRACE_PENDING_KEY})", {"trace_id": str(trace_id)})


def trace_pending_end(trace_id) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT pg_advisory_unlock({TRACE_PENDING_KEY})", {"trace_id": str(trace_id)})


def trace_record(*, trace: dict, decisions: list[DecisionRow]) -> uuid.UUID:
    """Persist one context call's trace and its decisions (one transaction, so never half-written), unless
    the scope was erased since the call read the items it names: then nothing is written."""
    started = time.perf_counter()
    trace_id = trace.get("id") or trace_id_new()
    # An unknown item type or reason code fails the table's check constraints; a tab or line break in an entity
    # would shift the fields of its line instead.
    if any("\t" in d.entity or "\n" in d.entity or "\t" in d.tier or "\n" in d.tier for d in decisions):
        raise ValueError("an entity is a name and a tier a word, without tabs or line breaks")
    params = {
        **trace,
        "id": str(trace_id),
        "empty_details": json.dumps(trace["empty_details"]) if trace.get("empty_details") is not None else None,
        "warnings": json.dumps(trace["warnings"]),
        "timings": json.dumps(trace["timings"]),
        "inputs": json.dumps(trace.get("inputs") or {}),
        "replay_of": trace.get("replay_of"),
        "replay": json.dumps(trace["replay"]) if trace.get("replay") is not None else None,
        "decisions": _decision_lines(decisions),
        "access_tau_seconds": ACCESS_TAU_SECONDS,
    }
    with connection.cursor() as cursor:
        cursor.execute(TRACE_INSERT_SQL, params)
        cursor.nextset()  # the INSERT's result, after the lock's
        written = cursor.fetchone()[0]
    if decisions and not written:
        logger.warning("trace %s not written: its scope was erased while the context call ran", trace_id)
    if trace.get("replay_of"):  # a replay is not a context call of the application: no metric, no log line
        return trace_id
    observability.context_call_observed(
        trace={**trace, "id": trace_id},
        reason_codes=[str(d.reason_code) for d in decisions],
        write_seconds=time.perf_counter() - started,
    )
    return trace_id


def trace_scope_lock(*, project_id: str, subject_id: str) -> None:
    """Take the scope's trace lock exclusively until the erasure's transaction commits: trace writes already holding
    it are waited for (their traces are then erased), later ones wait and then find the scope's items gone
    (TRACE_INSERT_SQL). Taken by the erasures (privacy.services) before anything reads the traces they delete."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(" + TRACE_LOCK_KEY + ")", {"project_id": project_id, "subject_id": subject_id}
        )


def traces_erase(*, project_id: str, subject_id: str | None) -> dict[str, int]:
    """A subject's traces, their decisions and its access counts (a trace holds the subject's query text and ids,
    an access count its items' ids), or a whole project's (subject_id None), under the scope's trace lock
    (trace_scope_lock) for a subject. A whole project is erased without it: only the benchmarks' own projects are,
    which nothing else writes meanwhile."""
    if not connection.in_atomic_block:
        raise RuntimeError("traces_erase runs inside the erasure's transaction (privacy.services.subject_erase)")
    with connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM traces_decision d USING traces_trace t WHERE d.trace_id = t.id AND d.project_id = t.project_id"
            " AND " + erase_condition(subject_id, "t"),
            {"p": project_id, "s": subject_id},
        )
        decisions = cursor.rowcount
        cursor.execute(
            "DELETE FROM traces_trace t WHERE " + erase_condition(subject_id, "t"), {"p": project_id, "s": subject_id}
        )
        traces = cursor.rowcount
        # The scope's access counts name its items: they go too.
        cursor.execute(
            "DELETE FROM traces_itemaccess a WHERE " + erase_condition(subject_id, "a"),
            {"p": project_id, "s": subject_id},
        )
        return {"decisions": decisions, "traces": traces, "item_accesses": cursor.rowcount}


def trace_ids_naming(*, project_id: str, subject_id: str, fact_ids: list) -> list:
    """The scope's traces whose decisions name one of `fact_ids`: what erasing those facts erases (their rendered
    text may quote them). Read under the scope's trace lock (trace_scope_lock)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT DISTINCT d.trace_id FROM traces_decision d"
            " JOIN traces_trace t ON t.id = d.trace_id AND t.project_id = d.project_id"
            " WHERE d.fact_id = ANY(%(ids)s) AND d.project_id = %(p)s AND t.subject_id = %(s)s",
            {"ids": fact_ids, "p": project_id, "s": subject_id},
        )
        return [row[0] for row in cursor.fetchall()]


def traces_erase_naming(*, project_id: str, subject_id: str, fact_ids: list, trace_ids: list) -> dict[str, int]:
    """The traces `trace_ids` (trace_ids_naming) go whole, with all their decisions, and the facts' access counts;
    under the scope's trace lock (trace_scope_lock)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM traces_decision WHERE project_id = %s AND trace_id = ANY(%s)", [project_id, trace_ids]
        )
        decisions = cursor.rowcount
        cursor.execute("DELETE FROM traces_trace WHERE project_id = %s AND id = ANY(%s)", [project_id, trace_ids])
        traces = cursor.rowcount
        cursor.execute(
            "DELETE FROM traces_itemaccess WHERE project_id = %(p)s AND subject_id = %(s)s AND item_id = ANY(%(ids)s)",
            {"ids": fact_ids, "p": project_id, "s": subject_id},
        )
        return {"decisions": decisions, "traces": traces, "item_accesses": cursor.rowcount}


# The projects that have traces, one index probe each (a loose scan of traces_trace_project_time): the prune
# then walks each project's traces oldest first on that index, with no index of its own on created_at (which
# every trace write would pay for). On Citus, run on each shard (hakimem.citus.rows_of_each_shard).
TRACE_PROJECTS_SQL = """
WITH RECURSIVE p AS (
    (SELECT project_id FROM {table} ORDER BY project_id LIMIT 1)
    UNION ALL
    SELECT (SELECT t.project_id FROM {table} t WHERE t.project_id > p.project_id ORDER BY t.project_id LIMIT 1)
      FROM p WHERE p.project_id IS NOT NULL
)
SELECT project_id FROM p WHERE project_id IS NOT NULL
"""


def trace_project_ids() -> list[str]:
    """The projects that have traces, each once (a shard's rows are one project's: no two shards name the same)."""
    return rows_of_each_shard(TRACE_PROJECTS_SQL, "traces_trace")


# One batch: the project's oldest traces before the cutoff and their decisions, in one statement (one
# transaction). Rows an erasure is deleting are skipped, not waited for.
# -- uses: traces_trace_project_time (project_id, created_at), traces_decision_trace_rank (trace_id, ...)
PRUNE_BATCH_SQL = """
WITH batch AS (
    SELECT id FROM traces_trace
     WHERE project_id = %(project_id)s AND created_at < %(before)s
     ORDER BY created_at
     LIMIT %(limit)s
       FOR UPDATE SKIP LOCKED
), d AS (
    DELETE FROM traces_decision x USING batch WHERE x.trace_id = batch.id AND x.project_id = %(project_id)s RETURNING 1
), t AS (
    DELETE FROM traces_trace x USING batch WHERE x.id = batch.id AND x.project_id = %(project_id)s RETURNING 1
)
SELECT (SELECT count(*) FROM t), (SELECT count(*) FROM d)
"""

PRUNE_COUNT_SQL = """
SELECT count(*),
       coalesce(sum((SELECT count(*) FROM traces_decision d WHERE d.trace_id = t.id AND d.project_id = t.project_id)), 0)
  FROM traces_trace t WHERE t.created_at < %(before)s
"""

PRUNE_BATCH_SIZE = 1000


def traces_prune(*, before: datetime, batch_size: int = PRUNE_BATCH_SIZE, dry_run: bool = False) -> dict[str, int]:
    """Delete the traces recorded before `before` and their decisions, `batch_size` traces per transaction, so
    that no lock is held for long (a batch of 1,000 calls is ~150k decision rows); returns the counts. With
    dry_run, counts what would go and deletes nothing."""
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    with connection.cursor() as cursor:
        if dry_run:
            cursor.execute(PRUNE_COUNT_SQL, {"before": before})
            traces, decisions = cursor.fetchone()
            return {"traces": traces, "decisions": int(decisions), "batches": 0}
        counts = {"traces": 0, "decisions": 0, "batches": 0}
        for project_id in trace_project_ids():
            while True:
                cursor.execute(PRUNE_BATCH_SQL, {"project_id": project_id, "before": before, "limit": batch_size})
                traces, decisions = cursor.fetchone()
                if not traces:
                    break
                counts["traces"] += traces
                counts["decisions"] += decisions
                counts["batches"] += 1
                if traces < batch_size:
                    break
    return counts


# --- access counts: what consolidation prunes ---------------------------------------------------------------

# One batch of access counts in key order (the primary key: project, subject, item), and among them the rows
# whose count, decayed to %(now)s, is under ACCESS_MIN_COUNT, deleted. Those rows are locked SKIP LOCKED: a row
# a trace writer is updating is being served again, so not stale, and the pruner never waits for a writer
# (which locks its rows in item order) while holding rows the writer wants. Only deleted: a count stored decayed
# to now would read the same as the one stored (the reader decays from `at`), for a write of every row.
# -- uses: traces_itemaccess_pkey
_ACCESS_PRUNE_BATCH_SQL = (
    """
WITH batch AS MATERIALIZED (
    SELECT project_id, subject_id, item_id FROM traces_itemaccess
     WHERE (project_id, subject_id, item_id) > (%(after_p)s, %(after_s)s, %(after_i)s::uuid){project}
     ORDER BY project_id, subject_id, item_id
     LIMIT %(limit)s
), stale AS (
    SELECT a.project_id, a.subject_id, a.item_id FROM traces_itemaccess a
     WHERE (a.project_id, a.subject_id, a.item_id) IN (SELECT * FROM batch){project_a}
       AND a.count * """
    + decay_sql("%(now)s::timestamptz", "a.at", "tau")
    + """ < %(min_count)s
       FOR UPDATE SKIP LOCKED
), gone AS (
    DELETE FROM traces_itemaccess a USING stale s
     WHERE (a.project_id, a.subject_id, a.item_id) = (s.project_id, s.subject_id, s.item_id){project_a}
       AND NOT %(dry_run)s
    RETURNING 1
)
SELECT (SELECT count(*) FROM batch), (SELECT count(*) FROM stale), (SELECT count(*) FROM gone), last.*
  FROM (SELECT * FROM batch ORDER BY project_id DESC, subject_id DESC, item_id DESC LIMIT 1) last
"""
)
# Of every project; of one, each statement names it (single-shard when distributed by project, docs/scaling.md).
ACCESS_PRUNE_BATCH_SQL = _ACCESS_PRUNE_BATCH_SQL.format(project="", project_a="")
PROJECT_ACCESS_PRUNE_BATCH_SQL = _ACCESS_PRUNE_BATCH_SQL.format(
    project=" AND project_id = %(project_id)s", project_a=" AND a.project_id = %(project_id)s"
)

ACCESS_PRUNE_BATCH_SIZE = 5000


def item_access_prune(
    *, now: datetime, project_id: str | None = None, dry_run: bool = False, batch_size: int = ACCESS_PRUNE_BATCH_SIZE
) -> dict[str, int]:
    """Delete the access counts (of `project_id`, or all) that have decayed below ACCESS_MIN_COUNT by `now`,
    batch_size rows looked at per transaction; returns how many were deleted and kept. With dry_run, counts
    what would go and deletes nothing."""
    after = ("", "", "00000000-0000-0000-0000-000000000000")
    counts = {"item_accesses_deleted": 0, "item_accesses_kept": 0}
    with connection.cursor() as cursor:
        while True:
            cursor.execute(
                ACCESS_PRUNE_BATCH_SQL if project_id is None else PROJECT_ACCESS_PRUNE_BATCH_SQL,
                {
                    "after_p": after[0],
                    "after_s": after[1],
                    "after_i": after[2],
                    "project_id": project_id,
                    "limit": batch_size,
                    "now": now,
                    "tau": ACCESS_TAU_SECONDS,
                    "min_count": ACCESS_MIN_COUNT,
                    "dry_run": dry_run,
                },
            )
            row = cursor.fetchone()
            if row is None:  # an empty batch
                return counts
            looked, stale, gone, *after = row
            counts["item_accesses_deleted"] += stale if dry_run else gone
            counts["item_accesses_kept"] += looked - (stale if dry_run else gone)
            if looked < batch_size:
                return counts
