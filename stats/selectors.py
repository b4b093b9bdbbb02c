"""Aggregates over traces and facts. GET /v1/stats/overview and the /stats/ pages call these same functions:
one computation, two presentations. Their statements, and the invariants every one keeps, are stats/selectors_sql.py.

Each function reads the rollup (stats/rollup.py) for the whole hours (days, for the per-subject and per-fact
rows) of the period before the project's mark, and runs the raw query over the rest: the partial hour or day
at the period's start and what came after the mark. The raw queries are the definition: with rollup=False a
function runs them over the whole period, and a test checks both give the same numbers.
scripts/bench_stats.py times both on 1M traces and 10M decisions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from datetime import timezone as dt_timezone

from django.utils import timezone

from facts.models import ConflictSet
from facts.selectors import conflict_list
from hakimem.db import fetch_dicts
from hakimem.models import ApiKey
from stats.models import RollupMark
from stats.selectors_sql import (
    CALLS_PER_DAY_SQL,
    DAY_LATENCY_COUNTS_SQL,
    DAY_LATENCY_VALUES_SQL,
    DECISIONS_BY_REASON_SQL,
    LATENCY_COUNTS_SQL,
    LATENCY_VALUES_SQL,
    NEVER_SERVED_COUNT_SQL,
    NEVER_SERVED_SQL,
    ROLLUP_CALLS_PER_DAY_SQL,
    ROLLUP_NEVER_SERVED_COUNT_SQL,
    ROLLUP_NEVER_SERVED_SQL,
    ROLLUP_SUBJECTS_BY_CALLS_SQL,
    ROLLUP_TOTALS_SQL,
    STORE_SQL,
    SUBJECTS_BY_CALLS_SQL,
    TRACE_TOTALS_SQL,
)
from stats.rollup import (
    DAY,
    HOUR,
    SLICE,
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
