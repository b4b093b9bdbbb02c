"""Aggregates over traces and facts. GET /v1/stats/overview and the /stats/ pages call these same functions:
one computation, two presentations.

Invariants of every query below:
- replays (traces with replay_of, context/replay.py) are never counted: they are not calls of the application;
- it filters on project_id, and a query over traces on the period [since, until) of created_at, which
  traces_trace_project_time serves: nothing of another project is ever counted;
- the work is done in SQL: an overview is four aggregate statements whatever the number of traces, never a
  Python loop over rows.
scripts/bench_stats.py times them on 100k traces and 1M decisions in one project's 30 days.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from datetime import timezone as dt_timezone

from django.utils import timezone

from facts.models import ConflictSet, Fact
from facts.selectors import conflict_list
from hakimem.db import fetch_dicts, with_tables
from hakimem.models import ApiKey
from traces.models import EmptyReason, ReasonCode

DEFAULT_PERIOD = timedelta(days=30)
MAX_PERIOD = timedelta(days=366)  # bounds the work of one request, and the per-day series to a year
TOP_SUBJECTS = 10
NEVER_SERVED_SHOWN = 20
OPEN_CONFLICTS_SHOWN = 10


@dataclass(frozen=True)
class Period:
    """[since, until): since included, until excluded, both aware."""

    since: datetime
    until: datetime


PERIOD_REVERSED, PERIOD_TOO_LONG = "reversed", "too_long"


def period_problem(period: Period) -> str | None:
    """Why a period someone asked for cannot be shown: PERIOD_REVERSED (it does not start before it ends) or
    PERIOD_TOO_LONG (over MAX_PERIOD); None when it can. The API and the pages each say it in their words."""
    if period.since >= period.until:
        return PERIOD_REVERSED
    if period.until - period.since > MAX_PERIOD:
        return PERIOD_TOO_LONG
    return None


def days_period(first: date, last: date) -> Period:
    """Whole UTC days, `last` included: what the pages' date pickers mean."""
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
       count(*) FILTER (WHERE facts_served > 0) AS calls_with_facts,
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
  JOIN traces_decision d ON d.trace_id = t.id
 WHERE t.project_id = %(project_id)s AND t.created_at >= %(since)s AND t.created_at < %(until)s
   AND t.replay_of IS NULL
 GROUP BY d.reason_code
"""

# -- uses: facts_fact_scope_status and facts_conflict_scope_status (project_id leads both).
# The store as it is now, whatever the period: what a curator has to act on today.
STORE_SQL = with_tables("""
SELECT (SELECT count(*) FROM {fact} WHERE project_id = %(project_id)s AND status = 'active') AS active_facts,
       count(*) AS open_conflicts,
       min(opened_at) AS oldest_open_conflict_at
  FROM {conflict_set}
 WHERE project_id = %(project_id)s AND status = 'open'
""", fact=Fact, conflict_set=ConflictSet)

# Facts never served: active now, recorded before the period ended (a fact recorded later could not have been
# served in it), and no `included` decision in a trace of the period. The count and the page's list share it.
# -- uses: the project's active facts (facts_fact_scope_status), then for each a probe of traces_decision_fact
#    (fact_id, decision) and traces_trace_pkey, or else a hash anti-join against the period's included
#    decisions. Probes grow with the store, the hash join with the period's traffic: NOT EXISTS leaves the
#    choice to the planner, so neither grows unbounded.
_NEVER_SERVED_FROM = with_tables("""
  FROM {fact} f
 WHERE f.project_id = %(project_id)s AND f.status = 'active' AND f.recorded_from < %(until)s
   AND NOT EXISTS (
       SELECT 1
         FROM traces_decision d
         JOIN traces_trace t ON t.id = d.trace_id
        WHERE d.fact_id = f.id AND d.decision = 'included'
          AND t.created_at >= %(since)s AND t.created_at < %(until)s
          AND t.replay_of IS NULL)
""", fact=Fact)
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
    calls_with_facts: int
    mean_used_tokens: float | None
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    empty_reasons: dict[str, int]  # every EmptyReason, 0 when absent
    decisions_by_reason_code: dict[str, int]  # every ReasonCode, 0 when absent
    active_facts: int
    open_conflicts: int
    oldest_open_conflict_at: datetime | None
    oldest_open_conflict_age: timedelta | None
    facts_never_served: int

    @property
    def injection_rate(self) -> float | None:
        """Share of context calls that served at least one fact; None when there was no call."""
        return self.calls_with_facts / self.context_calls if self.context_calls else None

    @property
    def decisions_total(self) -> int:
        return sum(self.decisions_by_reason_code.values())


def stats_overview(*, project_id: str, period: Period) -> Overview:
    params = {"project_id": project_id, "since": period.since, "until": period.until}
    totals = fetch_dicts(TRACE_TOTALS_SQL, params, json_columns=["empty_reasons"])[0]
    by_reason = {row["reason_code"]: row["n"] for row in fetch_dicts(DECISIONS_BY_REASON_SQL, params)}
    store = fetch_dicts(STORE_SQL, params)[0]
    never_served = fetch_dicts(NEVER_SERVED_COUNT_SQL, params)[0]["n"]
    empty = totals["empty_reasons"]
    oldest = store["oldest_open_conflict_at"]
    return Overview(
        project_id=project_id,
        period=period,
        context_calls=totals["context_calls"],
        calls_with_facts=totals["calls_with_facts"],
        mean_used_tokens=totals["mean_used_tokens"],
        latency_p50_ms=totals["latency_p50"],
        latency_p95_ms=totals["latency_p95"],
        empty_reasons={reason.value: empty.get(reason.value, 0) for reason in EmptyReason},
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
           count(*) FILTER (WHERE facts_served > 0) AS calls_with_facts,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY latency_ms) AS latency_p50,
           percentile_cont(0.95) WITHIN GROUP (ORDER BY latency_ms) AS latency_p95
      FROM traces_trace
     WHERE project_id = %(project_id)s AND created_at >= %(since)s AND created_at < %(until)s AND replay_of IS NULL
     GROUP BY 1
)
SELECT days.day, coalesce(p.context_calls, 0) AS context_calls, coalesce(p.calls_with_facts, 0) AS calls_with_facts,
       p.latency_p50, p.latency_p95
  FROM generate_series(date_trunc('day', %(since)s::timestamptz, 'UTC'),
                       %(until)s::timestamptz - interval '1 microsecond', interval '1 day') AS days(day)
  LEFT JOIN per_day p USING (day)
 ORDER BY days.day
"""

# -- uses: traces_trace_project_time (the period's range scan), then a hash aggregate per subject.
SUBJECTS_BY_CALLS_SQL = """
SELECT subject_id, count(*) AS context_calls,
       count(*) FILTER (WHERE facts_served > 0)::float8 / count(*) AS injection_rate
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
    calls_with_facts: int
    latency_p50_ms: float | None
    latency_p95_ms: float | None

    @property
    def injection_rate(self) -> float | None:
        return self.calls_with_facts / self.context_calls if self.context_calls else None


def calls_per_day(*, project_id: str, period: Period) -> list[Day]:
    rows = fetch_dicts(CALLS_PER_DAY_SQL, {"project_id": project_id, "since": period.since, "until": period.until})
    return [
        Day(
            day=row["day"].astimezone(dt_timezone.utc).date(),
            context_calls=row["context_calls"],
            calls_with_facts=row["calls_with_facts"],
            latency_p50_ms=row["latency_p50"],
            latency_p95_ms=row["latency_p95"],
        )
        for row in rows
    ]


def subjects_by_calls(*, project_id: str, period: Period, limit: int = TOP_SUBJECTS) -> list[dict]:
    """The subjects with the most context calls: subject_id, context_calls, injection_rate."""
    return fetch_dicts(
        SUBJECTS_BY_CALLS_SQL,
        {"project_id": project_id, "since": period.since, "until": period.until, "limit": limit},
    )


def facts_never_served(*, project_id: str, period: Period, limit: int = NEVER_SERVED_SHOWN) -> list[dict]:
    """The oldest active facts no context call of the period served: id, subject_id, text, category,
    recorded_from. stats_overview counts them all."""
    return fetch_dicts(
        NEVER_SERVED_SQL,
        {"project_id": project_id, "since": period.since, "until": period.until, "limit": limit},
    )


def open_conflicts_oldest_first(*, project_id: str, limit: int = OPEN_CONFLICTS_SHOWN) -> list[ConflictSet]:
    return list(conflict_list(project_id=project_id, subject_id=None, status="open").order_by("opened_at", "id")[:limit])


def project_ids() -> list[str]:
    """Every project that has (or had) an API key: the projects that can make context calls."""
    return list(ApiKey.objects.order_by("project_id").values_list("project_id", flat=True).distinct())
