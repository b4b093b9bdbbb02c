"""The statements of stats/selectors.py: the raw queries over traces and facts, which are the definition of every
figure, and the same figures read from the rollup (stats/rollup.py) for the whole hours and days it holds.

Invariants of every query below:
- replays (traces with replay_of, context/replay.py) are never counted: they are not calls of the application;
- it filters on project_id, and a query over traces on the period [since, until) of created_at, which
  traces_trace_project_time serves: nothing of another project is ever counted;
- the work is done in SQL: an overview is a few aggregate statements whatever the number of traces, never a
  Python loop over rows.
"""

from __future__ import annotations

from facts.models import ConflictSet, Fact
from hakimem.db import with_tables
from stats.models import DayLatencies, FactServed, HourLatencies, HourTotals, SliceTotals, SubjectDay
from stats.rollup import DECISIONS_OF_T, HOUR_TOTALS_OF_T, LATENCY_BUCKET_SQL, RAW_INTERVALS, TRACES_IN_INTERVALS

# --- the overview ---------------------------------------------------------------------------------------------

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

# --- the pages' details ---------------------------------------------------------------------------------------

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

# --- the same, from the rollup --------------------------------------------------------------------------------


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
