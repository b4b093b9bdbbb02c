"""The statistics' rollup (stats/models.py): built 5-minute slice by slice by `manage.py stats_rollup` every 5
minutes (or the periodic task stats.tasks.stats_rollup), read by stats/selectors.py, taken apart by the erasers.

Why a job and not the trace writer: a writer adding each call to its project's current row would hold that
row's lock to the end of the request's transaction, so a project's context calls would queue one behind the
other. The job sums closed slices once; the overview reads the rollup up to its mark and the raw query after it.
Why slices: the raw part of a period is its decisions probed per trace, ~13 us each; a period's ends read
SliceTotals (a few minutes raw) rather than an hour of traces.

Invariants:
- one SQL per aggregate, over a set of traces `t`: the job runs it over a range of slices to write the rows, the
  selectors over the part of a period not rolled up, the erasers over the traces they delete to take their
  share out. So the rows hold what the raw query would count, by construction;
- replays (replay_of) are never counted, as in stats/selectors.py;
- a call is injected when it served something (used_tokens > 0: its `rendered` is not empty), and every other one
  has an empty reason (traces.models.EmptyReason): calls_injected plus the empty reasons count every call;
- the job waits ROLLUP_LAG past the end of a slice before rolling it up: a trace is written at the end of its
  context call, dated at its start, and must have committed by then or it would never be counted;
- the job (exclusively) and the erasers (shared) take the project's rollup lock: an erasure either runs before
  the job reads the slice (and the job does not see the erased traces) or after it wrote the rows (and takes the
  traces' share out of them).
- stats keep their history past the traces' retention: traces_prune deletes traces, not their rollup, so the
  overview of a period before the retention cutoff still answers (the raw query no longer can). An erasure
  deletes the subject's rows of every period, and takes its traces' share out of the totals.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from datetime import timezone as dt_timezone

from django.db import connection, transaction
from django.db.models import Func, Sum
from django.utils import timezone

from hakimem.db import fetch_dicts, with_tables
from stats.models import DayLatencies, FactServed, HourLatencies, HourTotals, RollupMark, SliceTotals, SubjectDay
from traces.services import trace_project_ids

ROLLUP_LAG = timedelta(minutes=10)
SLICE = timedelta(minutes=5)  # the job's step: the raw part of a period is at most ROLLUP_LAG + 2 slices
HOUR = timedelta(hours=1)
DAY = timedelta(days=1)

# ~1.6% wide buckets of latency (ln scale, 64 per e-fold); the clamp keeps ln defined and the value an int. The
# width trades the rows a percentile counts (whole days x buckets) against the values it sorts in the bucket that
# holds its rank: at 32 per e-fold, the median's bucket held 19,845 of a month's 1M latencies, and sorting the
# buckets of p50 and p95 was the overview's largest part (docs/performance.md; 0007_finer_latency_buckets).
LATENCY_BUCKET_SQL = "floor(ln(least(greatest({x}, 0.001), 1e9)) * 64)::int2"

# The project's rollup lock, seed 2 (facts.locks' scope lock is seed 0, traces' trace lock seed 1).
ROLLUP_LOCK_KEY = "hashtextextended(%(project_id)s, 2)"

# --- the traces an aggregate reads: a CTE named t ------------------------------------------------------------

TRACE_COLUMNS = "t.id, t.subject_id, t.created_at, t.facts_served, t.used_tokens, t.latency_ms, t.empty_reason"

# A project's traces in two [since, until) intervals (the job: one, the other empty; the selectors: the parts of
# a period not rolled up, at its start and its end). Two parameters each rather than an array: the planner then
# estimates each range from its bounds (with an array it guessed a third of the table, and hashed all of it).
RAW_INTERVALS = """(t.created_at >= %(raw1_since)s AND t.created_at < %(raw1_until)s
        OR t.created_at >= %(raw2_since)s AND t.created_at < %(raw2_until)s)"""
# -- uses: traces_trace_project_time, a range scan per interval (BitmapOr)
TRACES_IN_INTERVALS = (
    """
SELECT """
    + TRACE_COLUMNS
    + """
  FROM traces_trace t
 WHERE t.project_id = %(project_id)s AND t.replay_of IS NULL
   AND """
    + RAW_INTERVALS
    + """
"""
)


def raw_intervals(*intervals: tuple[datetime, datetime]) -> dict:
    """The parameters of RAW_INTERVALS: up to two [since, until), the missing ones empty."""
    padded = [*intervals, *[(intervals[0][0], intervals[0][0])] * (2 - len(intervals))]
    return {f"raw{i}_{end}": bound for i, pair in enumerate(padded, 1) for end, bound in zip(("since", "until"), pair)}


# What an erasure deletes and the rollup counted: rolled up (before the mark), not replays.
# -- uses: traces_trace_scope_time (project_id, subject_id, created_at)
TRACES_OF_SUBJECT = (
    """
SELECT """
    + TRACE_COLUMNS
    + """
  FROM traces_trace t
 WHERE t.project_id = %(project_id)s AND t.subject_id = %(subject_id)s AND t.created_at < %(rolled_until)s
   AND t.replay_of IS NULL
"""
)
# -- uses: traces_trace_pkey
TRACES_BY_ID = (
    """
SELECT """
    + TRACE_COLUMNS
    + """
  FROM traces_trace t
 WHERE t.id = ANY(%(trace_ids)s::uuid[]) AND t.project_id = %(project_id)s AND t.created_at < %(rolled_until)s
   AND t.replay_of IS NULL
"""
)

# --- the aggregates, over t ---------------------------------------------------------------------------------

# The decisions of t, a CTE named td beside it, read by the hourly totals and the facts' served days. The project
# names the decisions' shard: on Citus a join by trace id alone is refused.
# -- uses: traces_decision_trace_rank (trace_id leads it), a probe per trace
DECISIONS_OF_T = """
SELECT t.created_at, t.subject_id, d.reason_code, d.decision, d.fact_id
  FROM t JOIN traces_decision d ON d.trace_id = t.id AND d.project_id = %(project_id)s
"""

_TOTALS_OF_T = """
SELECT c.{unit}, c.context_calls, c.calls_injected, c.used_tokens,
       coalesce(e.empty_reasons, jsonb_build_object()) AS empty_reasons,
       coalesce(x.decisions, jsonb_build_object()) AS decisions
  FROM (SELECT {start} AS {unit}, count(*) AS context_calls,
               count(*) FILTER (WHERE used_tokens > 0) AS calls_injected, sum(used_tokens) AS used_tokens
          FROM t GROUP BY 1) c
  LEFT JOIN (SELECT {unit}, jsonb_object_agg(empty_reason, n) AS empty_reasons
               FROM (SELECT {start} AS {unit}, empty_reason, count(*) AS n
                       FROM t WHERE empty_reason IS NOT NULL GROUP BY 1, 2) e0
              GROUP BY {unit}) e USING ({unit})
  LEFT JOIN (SELECT {unit}, jsonb_object_agg(reason_code, n) AS decisions
               FROM (SELECT {start} AS {unit}, reason_code, count(*) AS n
                       FROM td GROUP BY 1, 2) x0
              GROUP BY {unit}) x USING ({unit})
"""
HOUR_TOTALS_OF_T = _TOTALS_OF_T.replace("{start}", "date_trunc('hour', created_at, 'UTC')").replace("{unit}", "hour")
# 5-minute slices from midnight UTC (SLICE)
SLICE_TOTALS_OF_T = _TOTALS_OF_T.replace(
    "{start}", "date_bin('5 minutes', created_at, timestamptz '2000-01-01 00:00+00')"
).replace("{unit}", "slice")

_LATENCIES_OF_T = (
    """
SELECT date_trunc('{unit}', created_at, 'UTC') AS {unit}, """
    + LATENCY_BUCKET_SQL.format(x="latency_ms")
    + """ AS bucket,
       count(*) AS calls, array_agg(latency_ms ORDER BY latency_ms) AS latencies
  FROM t GROUP BY 1, 2
"""
)
LATENCIES_OF_T = _LATENCIES_OF_T.replace("{unit}", "hour")
DAY_LATENCIES_OF_T = _LATENCIES_OF_T.replace("{unit}", "day")

SUBJECT_DAYS_OF_T = """
SELECT date_trunc('day', created_at, 'UTC') AS day, subject_id, count(*) AS context_calls,
       count(*) FILTER (WHERE used_tokens > 0) AS calls_injected
  FROM t GROUP BY 1, 2
"""

# A fact's served days as FactServed holds them: by month, sorted, a count each.
FACTS_SERVED_OF_T = """
SELECT fact_id, date_trunc('month', day)::date AS month, subject_id, array_agg(day ORDER BY day) AS days,
       array_agg(served ORDER BY day) AS served
  FROM (SELECT fact_id, subject_id, (created_at AT TIME ZONE 'UTC')::date AS day, count(*) AS served
          FROM td
         WHERE decision = 'included' AND fact_id IS NOT NULL
         GROUP BY 1, 2, 3) d
 GROUP BY 1, 2, 3
"""


def _merge_days(other: str, sign: str) -> str:
    """A FactServed row r's (days, served) plus (sign "") or minus (sign "-") those of `other`, sorted by day, the
    days left at 0 dropped. Two assignments, each merging (a month's days at most): Citus sends a multiple-column
    assignment `(days, served) = (SELECT ...)` to the workers with its columns mixed up."""
    merged = (
        """(SELECT day, sum(n) AS n
                     FROM (SELECT * FROM unnest(r.days, r.served)
                           UNION ALL SELECT day, """
        + sign
        + """n FROM unnest("""
        + other
        + """.days, """
        + other
        + """.served) AS x(day, n)) u(day, n)
                    GROUP BY day) m
            WHERE n <> 0)"""
    )
    return (
        "days = (SELECT coalesce(array_agg(day ORDER BY day), '{{}}') FROM "
        + merged
        + ",\n           served = (SELECT coalesce(array_agg(n ORDER BY day), '{{}}') FROM "
        + merged
    )


_ROLLUP_TABLES = {
    "slice_totals": SliceTotals,
    "hour_totals": HourTotals,
    "hour_latencies": HourLatencies,
    "day_latencies": DayLatencies,
    "subject_day": SubjectDay,
    "fact_served": FactServed,
}

# --- the job ----------------------------------------------------------------------------------------------


def _add_json(column: str, other: str, sign: str) -> str:
    """{key: n} of the row r plus (sign "+") or minus (sign "-") the {key: n} of `other`, keys at 0 dropped (as
    the raw query never has them)."""
    return (
        # '{}', not jsonb_build_object() (STABLE): Citus refuses a function that is not IMMUTABLE in DO UPDATE SET.
        # Four braces: the f-string and then with_tables each halve them.
        f"(SELECT coalesce(jsonb_object_agg(key, n), '{{{{}}}}'::jsonb) FROM (SELECT key, sum(n) AS n"
        f" FROM (SELECT key, value::bigint AS n FROM jsonb_each_text(r.{column}) UNION ALL SELECT key, {sign}value::bigint"
        f" FROM jsonb_each_text({other}.{column})) u GROUP BY key) m WHERE n <> 0)"
    )


# One range of whole slices of one project, in one statement. The slices' rows are new (the mark says they were
# never rolled up); the hourly and daily ones may hold the earlier slices of their hour or day, and add these
# (their latencies merged, sorted). A day's latencies are written once, when it closes (DAY_LATENCIES_SQL):
# merged every 5 minutes, a busy day's arrays would be rewritten 288 times.
ROLLUP_SQL = with_tables(
    """
WITH t AS MATERIALIZED ("""
    + TRACES_IN_INTERVALS
    + """),
td AS MATERIALIZED ("""
    + DECISIONS_OF_T
    + """),
sl AS (
    INSERT INTO {slice_totals} (project_id, slice, context_calls, calls_injected, used_tokens, empty_reasons, decisions)
    SELECT %(project_id)s, a.* FROM ("""
    + SLICE_TOTALS_OF_T
    + """) a
    RETURNING 1
), h AS (
    INSERT INTO {hour_totals} AS r (project_id, hour, context_calls, calls_injected, used_tokens, empty_reasons, decisions)
    SELECT %(project_id)s, a.* FROM ("""
    + HOUR_TOTALS_OF_T
    + """) a
    ON CONFLICT (project_id, hour) DO UPDATE
       SET context_calls = r.context_calls + excluded.context_calls,
           calls_injected = r.calls_injected + excluded.calls_injected,
           used_tokens = r.used_tokens + excluded.used_tokens,
           empty_reasons = """
    + _add_json("empty_reasons", "excluded", "+")
    + """,
           decisions = """
    + _add_json("decisions", "excluded", "+")
    + """
    RETURNING 1
), l AS (
    INSERT INTO {hour_latencies} AS r (project_id, hour, bucket, calls, latencies)
    SELECT %(project_id)s, a.* FROM ("""
    + LATENCIES_OF_T
    + """) a
    ON CONFLICT (project_id, hour, bucket) DO UPDATE
       SET calls = r.calls + excluded.calls,
           latencies = ARRAY(SELECT v FROM unnest(r.latencies || excluded.latencies) v ORDER BY v)
    RETURNING 1
), s AS (
    INSERT INTO {subject_day} AS r (project_id, day, subject_id, context_calls, calls_injected)
    SELECT %(project_id)s, a.* FROM ("""
    + SUBJECT_DAYS_OF_T
    + """) a
    ON CONFLICT (project_id, day, subject_id) DO UPDATE
       SET context_calls = r.context_calls + excluded.context_calls,
           calls_injected = r.calls_injected + excluded.calls_injected
    RETURNING 1
), f AS (
    INSERT INTO {fact_served} AS r (project_id, fact_id, month, subject_id, days, served)
    SELECT %(project_id)s, a.* FROM ("""
    + FACTS_SERVED_OF_T
    + """) a
    ON CONFLICT (project_id, fact_id, month) DO UPDATE SET """
    + _merge_days("excluded", "")
    + """
    RETURNING 1
)
SELECT (SELECT count(*) FROM t) AS traces, (SELECT count(*) FROM sl) AS slices, (SELECT count(*) FROM h) AS hours, (SELECT count(*) FROM l) AS latency_rows,
       (SELECT count(*) FROM s) AS subject_days, (SELECT count(*) FROM f) AS facts_served
""",
    **_ROLLUP_TABLES,
)


# The latencies of a day that closed, from its hourly rows: the day's rows are never read before (the overview
# reads the hourly rows of the day its mark falls in).
# -- uses: stats_latency_hour_calls (project_id, hour), the day's 24 hours
DAY_LATENCIES_SQL = with_tables(
    """
INSERT INTO {day_latencies} (project_id, day, bucket, calls, latencies)
SELECT project_id, %(day)s, bucket, count(*), array_agg(v ORDER BY v)
  FROM {hour_latencies}, unnest(latencies) AS v
 WHERE project_id = %(project_id)s AND hour >= %(day)s AND hour < %(day)s::timestamptz + interval '1 day'
 GROUP BY project_id, bucket
""",
    **_ROLLUP_TABLES,
)


def floor_to(moment: datetime, unit: timedelta) -> datetime:
    """The start of the unit (SLICE, HOUR or DAY: each divides a day) that holds moment, in UTC."""
    moment = moment.astimezone(dt_timezone.utc)
    midnight = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    return midnight + (moment - midnight) // unit * unit


def ceil_to(moment: datetime, unit: timedelta) -> datetime:
    floor = floor_to(moment, unit)
    return floor if floor == moment else floor + unit


def _lock(project_id: str, *, shared: bool) -> None:
    function = "pg_advisory_xact_lock_shared" if shared else "pg_advisory_xact_lock"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {function}({ROLLUP_LOCK_KEY})", {"project_id": project_id})


def rolled_until(project_id: str) -> datetime | None:
    """The project's mark: its traces created before it are in the rollup. None: never rolled up."""
    return RollupMark.objects.filter(project_id=project_id).values_list("rolled_until", flat=True).first()


def _roll_one_day(project_id: str, target: datetime) -> dict | None:
    """Roll up the project's next slices up to the end of their day (at most up to target), in one transaction;
    None when there is nothing left to roll up."""
    with transaction.atomic():
        _lock(project_id, shared=False)
        mark = RollupMark.objects.select_for_update().filter(project_id=project_id).first()
        if mark is None:
            with connection.cursor() as cursor:
                # -- uses: traces_trace_project_time (the first entry of the project)
                cursor.execute("SELECT min(created_at) FROM traces_trace WHERE project_id = %s", [project_id])
                first = cursor.fetchone()[0]
            start = min(floor_to(first, HOUR) if first is not None else target, target)
            mark = RollupMark(project_id=project_id, rolled_until=start, slices_since=start)
        start = mark.rolled_until
        if start >= target:
            mark.save()
            return None
        end = min(floor_to(start, DAY) + DAY, target)
        with connection.cursor() as cursor:
            # A day of a busy project is ~1/30 of the decisions: the planner then hashed the whole table (a seq
            # scan of 10M rows, 3.4 s) rather than probe traces_decision_trace_rank per trace; the job's work
            # must grow with the day it reads, not with the table.
            cursor.execute("SET LOCAL enable_seqscan = off")
        counts = fetch_dicts(ROLLUP_SQL, {"project_id": project_id, **raw_intervals((start, end))})[0]
        if end == floor_to(end, DAY):
            with connection.cursor() as cursor:
                cursor.execute(DAY_LATENCIES_SQL, {"project_id": project_id, "day": end - DAY})
        mark.rolled_until = end
        mark.save()
        return counts


def stats_rollup(*, now: datetime | None = None, project_ids: list[str] | None = None) -> dict[str, int]:
    """Roll up every closed 5-minute slice (ended ROLLUP_LAG ago) not rolled up yet, of every project with traces
    (or of `project_ids`), a day at most per transaction. Idempotent: a slice is rolled up once, the mark says
    which."""
    target = floor_to((now or timezone.now()) - ROLLUP_LAG, SLICE)
    if project_ids is None:
        project_ids = trace_project_ids()
    totals = {"projects": 0, "days": 0, "traces": 0, "slices": 0}
    for project_id in project_ids:
        totals["projects"] += 1
        while (counts := _roll_one_day(project_id, target)) is not None:
            totals["days"] += 1
            totals["traces"] += counts["traces"]
            totals["slices"] += counts["slices"]
    return totals


@transaction.atomic
def stats_rollup_forget(*, project_id: str) -> None:
    """Delete the project's rollup and its mark: the next stats_rollup rebuilds it from the traces there are."""
    _lock(project_id, shared=False)
    for model in (RollupMark, SliceTotals, HourTotals, HourLatencies, DayLatencies, SubjectDay, FactServed):
        model.objects.filter(project_id=project_id).delete()


# --- the erasers ------------------------------------------------------------------------------------------


def _subtract_totals(name: str, table: str, period: str, source: str) -> str:
    """The CTE `name` taking the totals of `source` (rows per `period`) out of the rollup table `table`."""
    return (
        name
        + """ AS (
    UPDATE {"""
        + table
        + """} r
       SET context_calls = r.context_calls - a.context_calls, calls_injected = r.calls_injected - a.calls_injected,
           used_tokens = r.used_tokens - a.used_tokens, empty_reasons = """
        + _add_json("empty_reasons", "a", "-")
        + """,
           decisions = """
        + _add_json("decisions", "a", "-")
        + """
      FROM ("""
        + source
        + """) a
     WHERE r.project_id = %(project_id)s AND r."""
        + period
        + " = a."
        + period
        + """
    RETURNING 1
)"""
    )


def _subtract_latencies(name: str, table: str, period: str, source: str) -> str:
    """The CTE `name` taking the latencies of `source` out of `table`'s buckets: the multiset difference (EXCEPT
    ALL) takes out one occurrence of each erased value."""
    return (
        name
        + """ AS (
    UPDATE {"""
        + table
        + """} r
       SET calls = r.calls - a.calls,
           latencies = ARRAY(SELECT v FROM (SELECT unnest(r.latencies) EXCEPT ALL SELECT unnest(a.latencies)) k(v) ORDER BY v)
      FROM ("""
        + source
        + """) a
     WHERE r.project_id = %(project_id)s AND r."""
        + period
        + " = a."
        + period
        + """ AND r.bucket = a.bucket
    RETURNING 1
)"""
    )


# The erased traces' share out of every row they were counted in (the rows left at zero go next).
_SUBTRACT_FROM_T = (
    "\n"
    + ", ".join(
        [
            _subtract_totals("sl", "slice_totals", "slice", SLICE_TOTALS_OF_T),
            _subtract_totals("h", "hour_totals", "hour", HOUR_TOTALS_OF_T),
            _subtract_latencies("l", "hour_latencies", "hour", LATENCIES_OF_T),
            _subtract_latencies("dl", "day_latencies", "day", DAY_LATENCIES_OF_T),
            """s AS (
    UPDATE {subject_day} r
       SET context_calls = r.context_calls - a.context_calls, calls_injected = r.calls_injected - a.calls_injected
      FROM ("""
            + SUBJECT_DAYS_OF_T
            + """) a
     WHERE r.project_id = %(project_id)s AND r.day = a.day AND r.subject_id = a.subject_id
    RETURNING 1
)""",
            """f AS (
    UPDATE {fact_served} r SET """
            + _merge_days("a", "-")
            + """
      FROM ("""
            + FACTS_SERVED_OF_T
            + """) a
     WHERE r.project_id = %(project_id)s AND r.fact_id = a.fact_id AND r.month = a.month
    RETURNING 1
)""",
        ]
    )
    + """
SELECT (SELECT count(*) FROM t) AS traces
"""
)
_WITH_TD = "td AS MATERIALIZED (" + DECISIONS_OF_T + "),"
SUBTRACT_SUBJECT_SQL = with_tables(
    "WITH t AS MATERIALIZED (" + TRACES_OF_SUBJECT + ")," + _WITH_TD + _SUBTRACT_FROM_T, **_ROLLUP_TABLES
)
SUBTRACT_TRACES_SQL = with_tables(
    "WITH t AS MATERIALIZED (" + TRACES_BY_ID + ")," + _WITH_TD + _SUBTRACT_FROM_T, **_ROLLUP_TABLES
)

EMPTIED_ROWS_SQL = [
    with_tables("DELETE FROM {t} WHERE project_id = %(project_id)s AND context_calls = 0", t=SliceTotals),
    with_tables("DELETE FROM {t} WHERE project_id = %(project_id)s AND context_calls = 0", t=HourTotals),
    with_tables("DELETE FROM {t} WHERE project_id = %(project_id)s AND calls = 0", t=HourLatencies),
    with_tables("DELETE FROM {t} WHERE project_id = %(project_id)s AND calls = 0", t=DayLatencies),
    with_tables("DELETE FROM {t} WHERE project_id = %(project_id)s AND context_calls = 0", t=SubjectDay),
    with_tables("DELETE FROM {t} WHERE project_id = %(project_id)s AND days = '{{}}'", t=FactServed),
]


def _subtract(project_id: str, statement: str, params: dict) -> None:
    mark = rolled_until(project_id)
    if mark is None:
        return
    with connection.cursor() as cursor:
        cursor.execute(statement, {**params, "project_id": project_id, "rolled_until": mark})
        for statement in EMPTIED_ROWS_SQL:
            cursor.execute(statement, {"project_id": project_id})


def rollup_erase(project_id: str, subject_id: str | None, trace_ids: list | None) -> dict[str, int]:
    """Called by the erasures (privacy.services) before they delete traces, under the scope's trace lock: a
    subject's traces (trace_ids None), some of them (a revoked category's), or a whole project (subject_id None). Their share goes out of the totals and latencies; a subject's daily rows go
    whole, of every period (those of pruned traces too). Returns the subject's rows deleted."""
    _lock(project_id, shared=True)
    if subject_id is None:
        counts = {
            "stats_subject_days": SubjectDay.objects.filter(project_id=project_id).delete()[0],
            "stats_fact_days": _delete_fact_days(project_id=project_id),
        }
        for model in (SliceTotals, HourTotals, HourLatencies, DayLatencies, RollupMark):
            model.objects.filter(project_id=project_id).delete()
        return counts
    if trace_ids is not None:
        _subtract(project_id, SUBTRACT_TRACES_SQL, {"trace_ids": [str(i) for i in trace_ids]})
        return {}
    counts = {  # first: the subtraction would leave none of them to count
        "stats_subject_days": SubjectDay.objects.filter(project_id=project_id, subject_id=subject_id).delete()[0],
        "stats_fact_days": _delete_fact_days(project_id=project_id, subject_id=subject_id),
    }
    _subtract(project_id, SUBTRACT_SUBJECT_SQL, {"subject_id": subject_id})
    return counts


def rollup_erase_facts(project_id: str, subject_id: str, fact_ids: list) -> dict[str, int]:
    """Called by the erasure of a category (privacy.services.consent_revoke): the days the revoked facts were served that
    outlived their traces (pruned); the share of the traces erased with them went out first (rollup_erase)."""
    return {"stats_fact_days": _delete_fact_days(project_id=project_id, subject_id=subject_id, fact_id__in=fact_ids)}


def _delete_fact_days(**where) -> int:
    """Delete the FactServed rows `where` says; returns the days they held (what the receipt counts)."""
    rows = FactServed.objects.filter(**where)
    days = rows.aggregate(n=Sum(Func("days", function="cardinality")))["n"] or 0
    rows.delete()
    return days
