"""Aggregates over traces and facts. GET /v1/stats/overview and the /stats/ pages call these same functions:
one computation, two presentations.

Invariants of every query below:
- replays (traces with replay_of, context/replay.py) are never counted: they are not calls of the application;
- it filters on project_id, and a query over traces on the period [since, until) of created_at, which
  traces_trace_project_time serves: nothing of another project is ever counted;
- the work is done in SQL: an overview is a few aggregate statements whatever the number of traces, never a
  Python loop over rows.

Each function reads the rollup (stats/rollup.py) for the whole hours (days, for the per-subject and per-fact
rows) of the period before the project's mark, and runs the raw query over the rest: the partial hour or day
at the period's start and what came after the mark. The raw queries below are the definition: with
rollup=False a function runs them over the whole period, and a test checks both give the same numbers.
scripts/bench_stats.py times both on 1M traces and 10M decisions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from datetime import timezone as dt_timezone

from django.utils import timezone

from facts.models import ConflictSet, Fact
from facts.selectors import conflict_list
from hakimem.db import fetch_dicts, with_tables
from hakimem.models import ApiKey
from stats.models import DayLatencies, FactServed, HourLatencies, HourTotals, RollupMark, SliceTotals, SubjectDay
from stats.rollup import (
    DAY,
    DECISIONS_OF_T,
    HOUR,
    HOUR_TOTALS_OF_T,
    LATENCY_BUCKET_SQL,
    RAW_INTERVALS,
    SLICE,
    TRACES_IN_INTERVALS,
    ceil_to,
    floor_to,
    raw_intervals,
    rolled_until,
)
from traces.models import EmptyReason, ReasonCode

DEFAULT_PERIOD = timedelta(days=30)
# The calls neither injected nor under an empty reason: those traced before every empty call recorded one
# (traces migration 0014) that came back empty for another reason than the relevance floor, and, in the hours rolled
# up before it (stats migration 0008), those that served episodes but no fact, which were not counted as injected
# then. 0 in any period since.
NOT_RECORDED = "not_recorded"
MAX_PERIOD = timedelta(days=366)  # bounds the work of one request, and the per-day series to a year
TOP_SUBJECTS = 10
NEVER_SERVED_SHOWN = 20
OPEN_CONFLICTS_SHOWN = 10


@dataclass(frozen=True)
class Period:
    """[since, until): since included, until excluded, both aware."""

    since: datetime
    until: datetime


PERIOD_REVERSED, PERIOD_TOO_LONG, PERIOD_OUT_OF_CALENDAR = "reversed", "too_long", "out_of_calendar"
# A day inside the calendar's edges: the queries round a period's ends to whole days and hours, and step a day
# before its first, which past 0001-01-01 or 9999-12-31 leaves Python's dates (an OverflowError: a 500).
PERIOD_EARLIEST = datetime(1, 1, 2, tzinfo=dt_timezone.utc)
PERIOD_LATEST = datetime(9999, 12, 31, tzinfo=dt_timezone.utc)


def period_problem(period: Period) -> str | None:
    """Why a period someone asked for cannot be shown: PERIOD_REVERSED (it does not start before it ends),
    PERIOD_TOO_LONG (over MAX_PERIOD) or PERIOD_OUT_OF_CALENDAR (outside [PERIOD_EARLIEST, PERIOD_LATEST]); None
    when it can. The API and the pages each say it in their words."""
    if period.since >= period.until:
        return PERIOD_REVERSED
    if period.until - period.since > MAX_PERIOD:
        return PERIOD_TOO_LONG
    if period.since < PERIOD_EARLIEST or period.until > PERIOD_LATEST:
        return PERIOD_OUT_OF_CALENDAR
    return None


def days_period(first: date, last: date) -> Period:
    """Whole UTC days, `last` included: what the pages' date pickers mean (`last` before the calendar's last day)."""
    return Period(
        since=datetime.combine(first, time.min, tzinfo=dt_timezone.utc),
        until=datetime.combine(last + timedelta(days=1), time.min, tzinfo=dt_timezone.utc),
    )


# --- the overview -------------------------------------------------------------------------------------

# -- uses: traces_trace_project_time (project_id, created_at): one range scan of the period, materialised
#    once for the totals, the latency percentiles and the empty reasons.
TRACE_TOTALS_SQL = """
WITH period AS MATERIALIZED (
    SELECT facts_served, used_tokens, latency_ms, empty_reason
      FROM traces_trace
     WHERE project_id = %(project_id)s AND created_at >= %(since)s AND created_at < %(until)s AND replay_of IS NULL
)
SELECT count(*) AS context_calls,
       count(*) FILTER (WHERE used_tokens > 0) AS calls_injected,
       avg(used_tokens)::float8 AS mean_used_tokens,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY latency_ms) AS latency_p50,
       percentile_cont(0.95) WITHIN GROUP (ORDER BY latency_ms) AS latency_p95,
       (SELECT coalesce(jsonb_object_agg(empty_reason, n), '{}')
          FROM (SELECT empty_reason, count(*) AS n FROM period
                 WHERE empty_reason IS NOT NULL GROUP BY empty_reason) e) AS empty_reasons
  FROM period
"""

# -- uses: traces_trace_project_time for the period's traces, then their decisions: a hash join over
#    traces_decision when the project holds most of the table, or a nested loop through
#    traces_decision_trace_rank (trace_id leads it) when other projects' decisions dominate; the planner
#    picks by its row estimates. Either way the cost grows with the period's traffic.
DECISIONS_BY_REASON_SQL = """
SELECT d.reason_code, count(*) AS n
  FROM traces_trace t
  JOIN traces_decision d ON d.trace_id = t.id AND d.project_id = t.project_id
 WHERE t.project_id = %(project_id)s AND t.created_at >= %(since)s AND t.created_at < %(until)s
   AND t.replay_of IS NULL
 GROUP BY d.reason_code
"""

# -- uses: facts_fact_scope_status and facts_conflict_scope_status (project_id leads both).
# The store as it is now, whatever the period: what a curator has to act on today.
STORE_SQL = with_tables(
    """
SELECT (SELECT count(*) FROM {fact} WHERE project_id = %(project_id)s AND status = 'active') AS active_facts,
       count(*) AS open_conflicts,
       min(opened_at) AS oldest_open_conflict_at
  FROM {conflict_set}
 WHERE project_id = %(project_id)s AND status = 'open'
""",
    fact=Fact,
    conflict_set=ConflictSet,
)

# Facts never served: active now, recorded before the period ended (a fact recorded later could not have been
# served in it), and no `included` decision in a trace of the period. The count and the page's list share it.
# -- uses: the project's active facts (facts_fact_scope_status), then for each a probe of traces_decision_fact
#    (fact_id, decision) and traces_trace_pkey, or else a hash anti-join against the period's included
#    decisions. Probes grow with the store, the hash join with the period's traffic: NOT EXISTS leaves the
#    choice to the planner, so neither grows unbounded.
_NEVER_SERVED_FROM = with_tables(
    """
  FROM {fact} f
 WHERE f.project_id = %(project_id)s AND f.status = 'active' AND f.recorded_from < %(until)s
   AND NOT EXISTS (
       SELECT 1
         FROM traces_decision d
         JOIN traces_trace t ON t.id = d.trace_id AND t.project_id = %(project_id)s
        WHERE d.fact_id = f.id AND d.project_id = %(project_id)s AND d.decision = 'included'
          AND t.created_at >= %(since)s AND t.created_at < %(until)s
          AND t.replay_of IS NULL)
""",
    fact=Fact,
)
NEVER_SERVED_COUNT_SQL = "SELECT count(*) AS n" + _NEVER_SERVED_FROM
NEVER_SERVED_SQL = (
    "SELECT f.id, f.subject_id, f.text, f.category, f.recorded_from"
    + _NEVER_SERVED_FROM
    + " ORDER BY f.recorded_from, f.id LIMIT %(limit)s"
)


@dataclass(frozen=True)
class Overview:
    project_id: str
    period: Period
    context_calls: int
    calls_injected: int
    mean_used_tokens: float | None
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    # Every EmptyReason, 0 when absent, and NOT_RECORDED: with calls_injected they count every call of the period.
    empty_reasons: dict[str, int]
    decisions_by_reason_code: dict[str, int]  # every ReasonCode, 0 when absent
    active_facts: int
    open_conflicts: int
    oldest_open_conflict_at: datetime | None
    oldest_open_conflict_age: timedelta | None
    facts_never_served: int

    @property
    def injection_rate(self) -> float | None:
        """Share of context calls that served something (a non-empty `rendered`: a fact, an episode, an identity
        block or a procedure); None when there was no call. The other calls are counted under their empty reasons."""
        return self.calls_injected / self.context_calls if self.context_calls else None

    @property
    def calls_empty(self) -> int:
        return self.context_calls - self.calls_injected

    @property
    def decisions_total(self) -> int:
        return sum(self.decisions_by_reason_code.values())


def stats_overview(*, project_id: str, period: Period, rollup: bool = True) -> Overview:
    params = {"project_id": project_id, "since": period.since, "until": period.until}
    if rollup:
        mark, slices_since = RollupMark.objects.filter(project_id=project_id).values_list(
            "rolled_until", "slices_since"
        ).first() or (None, None)
        hours = _split(mark, period, HOUR)
        totals = fetch_dicts(
            ROLLUP_TOTALS_SQL,
            {**params, **_split_slices(mark, slices_since, period)},
            json_columns=["empty_reasons", "decisions"],
        )[0]
        ((totals["latency_p50"], totals["latency_p95"]),) = _latency_percentiles(
            project_id, hours, per_day=False
        ).values()
        by_reason = totals["decisions"]
        never_served = fetch_dicts(ROLLUP_NEVER_SERVED_COUNT_SQL, {**params, **_served_split(mark, period)})[0]["n"]
    else:
        totals = fetch_dicts(TRACE_TOTALS_SQL, params, json_columns=["empty_reasons"])[0]
        by_reason = {row["reason_code"]: row["n"] for row in fetch_dicts(DECISIONS_BY_REASON_SQL, params)}
        never_served = fetch_dicts(NEVER_SERVED_COUNT_SQL, params)[0]["n"]
    store = fetch_dicts(STORE_SQL, params)[0]
    empty = {reason.value: totals["empty_reasons"].get(reason.value, 0) for reason in EmptyReason}
    empty[NOT_RECORDED] = totals["context_calls"] - totals["calls_injected"] - sum(empty.values())
    oldest = store["oldest_open_conflict_at"]
    return Overview(
        project_id=project_id,
        period=period,
        context_calls=totals["context_calls"],
        calls_injected=totals["calls_injected"],
        mean_used_tokens=totals["mean_used_tokens"],
        latency_p50_ms=totals["latency_p50"],
        latency_p95_ms=totals["latency_p95"],
        empty_reasons=empty,
        decisions_by_reason_code={code.value: by_reason.get(code.value, 0) for code in ReasonCode},
        active_facts=store["active_facts"],
        open_conflicts=store["open_conflicts"],
        oldest_open_conflict_at=oldest,
        oldest_open_conflict_age=timezone.now() - oldest if oldest else None,
        facts_never_served=never_served,
    )


# --- the pages' details -------------------------------------------------------------------------------

# -- uses: traces_trace_project_time, one range scan of the period grouped by UTC day; generate_series
#    supplies the days without a call, so a chart shows them as gaps rather than skipping them.
CALLS_PER_DAY_SQL = """
WITH per_day AS (
    SELECT date_trunc('day', created_at, 'UTC') AS day,
           count(*) AS context_calls,
           count(*) FILTER (WHERE used_tokens > 0) AS calls_injected,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY latency_ms) AS latency_p50,
           percentile_cont(0.95) WITHIN GROUP (ORDER BY latency_ms) AS latency_p95
      FROM traces_trace
     WHERE project_id = %(project_id)s AND created_at >= %(since)s AND created_at < %(until)s AND replay_of IS NULL
     GROUP BY 1
)
SELECT days.day, coalesce(p.context_calls, 0) AS context_calls, coalesce(p.calls_injected, 0) AS calls_injected,
       p.latency_p50, p.latency_p95
  FROM generate_series(date_trunc('day', %(since)s::timestamptz, 'UTC'),
                       %(until)s::timestamptz - interval '1 microsecond', interval '1 day') AS days(day)
  LEFT JOIN per_day p USING (day)
 ORDER BY days.day
"""

# -- uses: traces_trace_project_time (the period's range scan), then a hash aggregate per subject.
SUBJECTS_BY_CALLS_SQL = """
SELECT subject_id, count(*) AS context_calls,
       count(*) FILTER (WHERE used_tokens > 0)::float8 / count(*) AS injection_rate
  FROM traces_trace
 WHERE project_id = %(project_id)s AND created_at >= %(since)s AND created_at < %(until)s AND replay_of IS NULL
 GROUP BY subject_id
 ORDER BY context_calls DESC, subject_id
 LIMIT %(limit)s
"""


@dataclass(frozen=True)
class Day:
    day: date
    context_calls: int
    calls_injected: int
    latency_p50_ms: float | None
    latency_p95_ms: float | None

    @property
    def injection_rate(self) -> float | None:
        return self.calls_injected / self.context_calls if self.context_calls else None


def calls_per_day(*, project_id: str, period: Period, rollup: bool = True) -> list[Day]:
    params = {"project_id": project_id, "since": period.since, "until": period.until}
    if rollup:
        hours = _split(rolled_until(project_id), period, HOUR)
        rows = fetch_dicts(ROLLUP_CALLS_PER_DAY_SQL, {**params, **hours})
        percentiles = _latency_percentiles(project_id, hours, per_day=True)
        for row in rows:
            row["latency_p50"], row["latency_p95"] = percentiles.get(row["day"], (None, None))
    else:
        rows = fetch_dicts(CALLS_PER_DAY_SQL, params)
    return [
        Day(
            day=row["day"].astimezone(dt_timezone.utc).date(),
            context_calls=row["context_calls"],
            calls_injected=row["calls_injected"],
            latency_p50_ms=row["latency_p50"],
            latency_p95_ms=row["latency_p95"],
        )
        for row in rows
    ]


def subjects_by_calls(*, project_id: str, period: Period, limit: int = TOP_SUBJECTS, rollup: bool = True) -> list[dict]:
    """The subjects with the most context calls: subject_id, context_calls, injection_rate."""
    params = {"project_id": project_id, "since": period.since, "until": period.until, "limit": limit}
    if rollup:
        return fetch_dicts(ROLLUP_SUBJECTS_BY_CALLS_SQL, {**params, **_split(rolled_until(project_id), period, DAY)})
    return fetch_dicts(SUBJECTS_BY_CALLS_SQL, params)


def facts_never_served(
    *, project_id: str, period: Period, limit: int = NEVER_SERVED_SHOWN, rollup: bool = True
) -> list[dict]:
    """The oldest active facts no context call of the period served: id, subject_id, text, category,
    recorded_from. stats_overview counts them all."""
    params = {"project_id": project_id, "since": period.since, "until": period.until, "limit": limit}
    if rollup:
        return fetch_dicts(ROLLUP_NEVER_SERVED_SQL, {**params, **_served_split(rolled_until(project_id), period)})
    return fetch_dicts(NEVER_SERVED_SQL, params)


def open_conflicts_oldest_first(*, project_id: str, limit: int = OPEN_CONFLICTS_SHOWN) -> list[ConflictSet]:
    return list(
        conflict_list(project_id=project_id, subject_id=None, status="open").order_by("opened_at", "id")[:limit]
    )


def project_ids() -> list[str]:
    """Every project that has (or had) an API key: the projects that can make context calls."""
    return list(ApiKey.objects.order_by("project_id").values_list("project_id", flat=True).distinct())


# --- the same, from the rollup ------------------------------------------------------------------------------


def _split(mark: datetime | None, period: Period, unit: timedelta) -> dict:
    """The period's part the rollup holds in whole units (hours or days): [rolled_since, rolled_until), and the
    rest as two intervals for the raw query (RAW_INTERVALS): the partial unit at the start, and what came
    after the project's mark (or the partial unit at the end)."""
    since, until = period.since, period.until
    start = ceil_to(since, unit)
    if mark is None:
        end = start
    else:
        end = mark if mark <= until else until - (until - start) % unit
    if end <= start:  # nothing rolled up in the period: all of it raw
        return {"rolled_since": since, "rolled_until": since, **raw_intervals((since, until))}
    return {"rolled_since": start, "rolled_until": end, **raw_intervals((since, start), (end, until))}


def _split_slices(mark: datetime | None, slices_since: datetime | None, period: Period) -> dict:
    """The period's part the rollup holds, as the totals read it: whole hours [rolled_since, rolled_until) from
    HourTotals, the slices of the partial hours at either end from SliceTotals (slices1_*, slices2_*), and the
    rest raw (RAW_INTERVALS): the partial slice at the start, and what came after the mark (or the partial slice
    at the end). A partial hour before slices_since (rolled up before slices were kept) is read raw."""
    since, until = period.since, period.until
    first = ceil_to(since, SLICE)
    last = first if mark is None else (mark if mark <= until else floor_to(until, SLICE))
    hours_since, hours_until = ceil_to(first, HOUR), floor_to(last, HOUR)
    if hours_since >= hours_until:  # no whole hour: slices alone, or nothing rolled up
        if last <= first or first < slices_since:
            return {
                "rolled_since": since,
                "rolled_until": since,
                "slices1_since": since,
                "slices1_until": since,
                "slices2_since": since,
                "slices2_until": since,
                **raw_intervals((since, until)),
            }
        hours_since = hours_until = last
    if first < slices_since:
        first = hours_since
    if hours_until < slices_since:
        last = hours_until
    return {
        "rolled_since": hours_since,
        "rolled_until": hours_until,
        "slices1_since": first,
        "slices1_until": hours_since,
        "slices2_since": hours_until,
        "slices2_until": last,
        **raw_intervals((since, first), (last, until)),
    }


def _served_split(mark: datetime | None, period: Period) -> dict:
    """_split by days, and the rolled part as FactServed's days read it: the first day and the last (a partial day
    at the mark included: its served days count the traces before the mark only)."""
    split = _split(mark, period, DAY)
    first, until = split["rolled_since"], split["rolled_until"]
    first_day = first.astimezone(dt_timezone.utc).date()
    last_day = (ceil_to(until, DAY) - DAY).astimezone(dt_timezone.utc).date() if until > first else first_day - DAY
    return {**split, "rolled_first_day": first_day, "rolled_last_day": last_day}


def _sum_json(column: str) -> str:
    return (
        f"(SELECT coalesce(jsonb_object_agg(key, n), jsonb_build_object()) FROM (SELECT key, sum(value::bigint) AS n"
        f" FROM hours, jsonb_each_text(hours.{column}) GROUP BY key) s) AS {column}"
    )


# -- uses: stats_hourtotals_pkey (project_id, hour) for the rolled hours, stats_slicetotals_pkey (project_id,
#    slice) for the slices of the partial hours; traces_trace_project_time and traces_decision_trace_rank for the
#    raw intervals (ROLLUP_LAG and a slice or two: minutes).
ROLLUP_TOTALS_SQL = with_tables(
    """
WITH t AS MATERIALIZED ("""
    + TRACES_IN_INTERVALS
    + """),
td AS ("""
    + DECISIONS_OF_T
    + """),
hours AS (
    SELECT context_calls, calls_injected, used_tokens, empty_reasons, decisions
      FROM {hour_totals}
     WHERE project_id = %(project_id)s AND hour >= %(rolled_since)s AND hour < %(rolled_until)s
    UNION ALL
    SELECT context_calls, calls_injected, used_tokens, empty_reasons, decisions
      FROM {slice_totals}
     WHERE project_id = %(project_id)s AND (slice >= %(slices1_since)s AND slice < %(slices1_until)s
                                            OR slice >= %(slices2_since)s AND slice < %(slices2_until)s)
    UNION ALL
    SELECT context_calls, calls_injected, used_tokens, empty_reasons, decisions FROM ("""
    + HOUR_TOTALS_OF_T
    + """) a
)
SELECT coalesce(sum(context_calls), 0)::int8 AS context_calls, coalesce(sum(calls_injected), 0)::int8 AS calls_injected,
       (sum(used_tokens)::numeric / nullif(sum(context_calls), 0))::float8 AS mean_used_tokens,
       """
    + _sum_json("empty_reasons")
    + """, """
    + _sum_json("decisions")
    + """
  FROM hours
""",
    hour_totals=HourTotals,
    slice_totals=SliceTotals,
)

ROLLUP_CALLS_PER_DAY_SQL = with_tables(
    """
WITH t AS MATERIALIZED ("""
    + TRACES_IN_INTERVALS
    + """),
per_day AS (
    SELECT day, sum(context_calls) AS context_calls, sum(calls_injected) AS calls_injected
      FROM (SELECT date_trunc('day', hour, 'UTC') AS day, context_calls, calls_injected
              FROM {hour_totals}
             WHERE project_id = %(project_id)s AND hour >= %(rolled_since)s AND hour < %(rolled_until)s
            UNION ALL
            SELECT date_trunc('day', created_at, 'UTC'), 1, (used_tokens > 0)::int FROM t) x
     GROUP BY day
)
SELECT days.day, coalesce(p.context_calls, 0)::int8 AS context_calls, coalesce(p.calls_injected, 0)::int8 AS calls_injected
  FROM generate_series(date_trunc('day', %(since)s::timestamptz, 'UTC'),
                       %(until)s::timestamptz - interval '1 microsecond', interval '1 day') AS days(day)
  LEFT JOIN per_day p USING (day)
 ORDER BY days.day
""",
    hour_totals=HourTotals,
)

# Latency percentiles in two steps, each exact: the calls per bucket (and per day for the pages' series), from
# which the ranks percentile_cont reads are located in a bucket, then the values at those ranks within their
# bucket, one sort per bucket read. {group} is the day, or NULL for the whole period. The rolled part is read
# from DayLatencies for its whole days and from HourLatencies for the hours of its partial days (_by_day).
# -- uses: stats_daylatency_day_calls and stats_latency_hour_calls (project_id, day or hour) INCLUDE (bucket,
#    calls), then stats_daylatency_bucket_day and stats_latency_bucket_hour per bucket read.
_LATENCY_GROUP = {
    False: ("NULL::timestamptz", "NULL::timestamptz", "NULL::timestamptz"),
    True: ("day", "date_trunc('day', hour, 'UTC')", "date_trunc('day', created_at, 'UTC')"),
}
_IN_HOURS = (
    """(hour >= %(hours1_since)s AND hour < %(hours1_until)s OR hour >= %(hours2_since)s AND hour < %(hours2_until)s)"""
)


def _latency_sql(per_day: bool) -> tuple[str, str]:
    day_group, hour_group, raw_group = _LATENCY_GROUP[per_day]
    bucket = LATENCY_BUCKET_SQL.format(x="latency_ms")
    counts = with_tables(
        """
WITH t AS MATERIALIZED ("""
        + TRACES_IN_INTERVALS
        + """)
SELECT grp, bucket, sum(calls)::int8 AS calls
  FROM (SELECT """
        + day_group
        + """ AS grp, bucket, calls
          FROM {day_latencies}
         WHERE project_id = %(project_id)s AND day >= %(days_since)s AND day < %(days_until)s
        UNION ALL
        SELECT """
        + hour_group
        + """, bucket, calls
          FROM {hour_latencies}
         WHERE project_id = %(project_id)s AND """
        + _IN_HOURS
        + """
        UNION ALL
        SELECT """
        + raw_group
        + """, """
        + bucket
        + """, 1 FROM t) x
 GROUP BY grp, bucket
 ORDER BY grp, bucket
""",
        day_latencies=DayLatencies,
        hour_latencies=HourLatencies,
    )
    # The group's own bounds: the whole period (NULL: greatest and least ignore it) or one day.
    within = "{column} >= greatest(%({since})s, w.grp) AND {column} < least(%({until})s, w.grp + interval '1 day')"
    values = with_tables(
        """
WITH t AS MATERIALIZED ("""
        + TRACES_IN_INTERVALS
        + """),
w AS (SELECT grp, bucket, array_agg(rank) AS ranks
        FROM unnest(%(groups)s::timestamptz[], %(buckets)s::int2[], %(ranks)s::int8[]) AS u(grp, bucket, rank)
       GROUP BY grp, bucket)
SELECT w.grp, w.bucket, n.rank, n.v
  FROM w CROSS JOIN LATERAL (
       SELECT rank, v
         FROM (SELECT v, row_number() OVER (ORDER BY v) - 1 AS rank
                 FROM (SELECT unnest(l.latencies) AS v
                         FROM {day_latencies} l
                        WHERE l.project_id = %(project_id)s AND l.bucket = w.bucket
                          AND """
        + within.format(column="l.day", since="days_since", until="days_until")
        + """
                       UNION ALL
                       SELECT unnest(l.latencies)
                         FROM {hour_latencies} l
                        WHERE l.project_id = %(project_id)s AND l.bucket = w.bucket
                          AND ("""
        + within.format(column="l.hour", since="hours1_since", until="hours1_until")
        + """
                               OR """
        + within.format(column="l.hour", since="hours2_since", until="hours2_until")
        + """)
                       UNION ALL
                       SELECT latency_ms FROM t
                        WHERE """
        + bucket
        + """ = w.bucket AND """
        + raw_group
        + """ IS NOT DISTINCT FROM w.grp) x
                ORDER BY v LIMIT (SELECT max(r) + 1 FROM unnest(w.ranks) r)) s
        WHERE rank = ANY(w.ranks)) n
""",
        day_latencies=DayLatencies,
        hour_latencies=HourLatencies,
    )
    return counts, values


LATENCY_COUNTS_SQL, LATENCY_VALUES_SQL = _latency_sql(per_day=False)
DAY_LATENCY_COUNTS_SQL, DAY_LATENCY_VALUES_SQL = _latency_sql(per_day=True)
PERCENTILES = (0.5, 0.95)


def _by_day(hours: dict) -> dict:
    """The rolled part of an _split by hours, as the latencies read it: its whole days [days_since, days_until),
    and the hours of its partial days, before and after them (two intervals, either may be empty)."""
    since, until = hours["rolled_since"], hours["rolled_until"]
    first, last = ceil_to(since, DAY), floor_to(until, DAY)
    if first >= last:  # no whole day: hours only
        first = last = until
    return {
        **hours,
        "days_since": first,
        "days_until": last,
        "hours1_since": since,
        "hours1_until": first,
        "hours2_since": last,
        "hours2_until": until,
    }


def _latency_percentiles(project_id: str, hours: dict, *, per_day: bool) -> dict:
    """{group: (p50, p95)}, each as percentile_cont computes it (float8 arithmetic, the same operations): the
    values at ranks floor and ceil of q * (n - 1), 0-based, and their linear interpolation."""
    counts_sql, values_sql = (
        (DAY_LATENCY_COUNTS_SQL, DAY_LATENCY_VALUES_SQL) if per_day else (LATENCY_COUNTS_SQL, LATENCY_VALUES_SQL)
    )
    params = {"project_id": project_id, **_by_day(hours)}
    buckets: dict = {}
    for row in fetch_dicts(counts_sql, params):
        buckets.setdefault(row["grp"], []).append((row["bucket"], row["calls"]))
    wanted = []  # (group, bucket, rank within the bucket, rank in the group), and where each percentile reads them
    reads: dict = {}
    for group, counts in buckets.items():
        total = sum(n for _, n in counts)
        for q in PERCENTILES:
            position = q * (total - 1)
            first, second = math.floor(position), math.ceil(position)
            reads[group, q] = (position - first, first, second)
            for rank in {first, second}:
                before = 0
                for bucket, n in counts:
                    if rank < before + n:
                        wanted.append((group, bucket, rank - before, rank))
                        break
                    before += n
    if not wanted:
        return {None: (None, None)} if not per_day else {}
    rows = fetch_dicts(
        values_sql,
        {
            **params,
            "groups": [w[0] for w in wanted],
            "buckets": [w[1] for w in wanted],
            "ranks": [w[2] for w in wanted],
        },
    )
    at_rank = {(row["grp"], row["bucket"], row["rank"]): row["v"] for row in rows}
    value = {(group, rank): at_rank[group, bucket, bucket_rank] for group, bucket, bucket_rank, rank in wanted}
    result = {}
    for group in buckets:
        pair = []
        for q in PERCENTILES:
            proportion, first, second = reads[group, q]
            low, high = value[group, first], value[group, second]
            pair.append(low + (proportion * (high - low)) if second > first else low)
        result[group] = tuple(pair)
    return result


# -- uses: stats_subjectday_pkey (project_id, day, subject_id) for the rolled days; traces_trace_project_time.
ROLLUP_SUBJECTS_BY_CALLS_SQL = with_tables(
    """
WITH t AS MATERIALIZED ("""
    + TRACES_IN_INTERVALS
    + """)
SELECT subject_id, sum(context_calls)::int8 AS context_calls,
       sum(calls_injected)::float8 / sum(context_calls)::float8 AS injection_rate
  FROM (SELECT subject_id, context_calls, calls_injected
          FROM {subject_day}
         WHERE project_id = %(project_id)s AND day >= %(rolled_since)s AND day < %(rolled_until)s
        UNION ALL
        SELECT subject_id, 1, (used_tokens > 0)::int FROM t) x
 GROUP BY subject_id
 ORDER BY context_calls DESC, subject_id
 LIMIT %(limit)s
""",
    subject_day=SubjectDay,
)

# Facts never served: the active facts without a served day in the rolled days: a hash anti-join of the
# project's facts with the facts served in the rolled days' months (stats_factserved_month), a row counted when a
# day of its sorted array falls in [rolled_first_day, rolled_last_day], which two binary searches tell
# (width_bucket: the days up to a date).
# Then, of those few, the ones without an included decision in the raw intervals: a probe of
# traces_decision_fact per candidate, then of traces_trace_pkey per decision found. The OFFSET 0s pin that order
# (PostgreSQL does not turn a subquery with an OFFSET into a join): the raw intervals may hold a day of decisions,
# which a hash anti-join read whole, and a plan driven by the intervals' traces probed their decisions once per
# candidate (2.4 s).
_ROLLUP_NEVER_SERVED = with_tables(
    (
        """
WITH served AS (
    SELECT s.fact_id
      FROM {fact_served} s
     WHERE s.project_id = %(project_id)s
       AND s.month >= date_trunc('month', %(rolled_first_day)s::date)::date AND s.month <= %(rolled_last_day)s::date
       AND width_bucket(%(rolled_last_day)s::date, s.days) > width_bucket(%(rolled_first_day)s::date - 1, s.days)
), candidates AS MATERIALIZED (
    SELECT f.id, f.subject_id, f.text, f.category, f.recorded_from
      FROM {fact} f
     WHERE f.project_id = %(project_id)s AND f.status = 'active' AND f.recorded_from < %(until)s
       AND NOT EXISTS (SELECT 1 FROM served WHERE served.fact_id = f.id)
)
SELECT {columns}
  FROM candidates c
 WHERE NOT EXISTS (
       SELECT 1
         FROM traces_decision d
        WHERE d.fact_id = c.id AND d.project_id = %(project_id)s AND d.decision = 'included'
          AND EXISTS (SELECT 1 FROM traces_trace t
                       WHERE t.id = d.trace_id AND t.project_id = %(project_id)s AND t.replay_of IS NULL AND """
        + RAW_INTERVALS
        + """
                      OFFSET 0)
       OFFSET 0)
"""
    ).replace("{columns}", "{{columns}}"),
    fact=Fact,
    fact_served=FactServed,
)
ROLLUP_NEVER_SERVED_COUNT_SQL = _ROLLUP_NEVER_SERVED.replace("{columns}", "count(*) AS n")
ROLLUP_NEVER_SERVED_SQL = (
    _ROLLUP_NEVER_SERVED.replace("{columns}", "c.id, c.subject_id, c.text, c.category, c.recorded_from")
    + " ORDER BY c.recorded_from, c.id LIMIT %(limit)s"
)
