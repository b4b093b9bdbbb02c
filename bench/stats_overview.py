"""How fast is GET /v1/stats/overview on a busy project, from the raw query and from the rollup? Loads one,
builds its rollup, times both, checks they answer the same, cleans up.

    .venv/bin/python scripts/bench_stats.py                 # 1M traces, 10M decisions, 10 runs
    .venv/bin/python scripts/bench_stats.py --traces 20000 --runs 3 --keep
    .venv/bin/python scripts/bench_stats.py --reuse         # the rows a --keep run left, not loaded again

Writes into the development database (the embedded server in var/pgdata, or DATABASE_URL), project
"stats-bench", with INSERT ... SELECT generate_series (no row crosses the wire): 500 subjects with 10 facts
and 2 episodes each, `--traces` context calls spread over the last 30 days, 10 decisions per call (8 facts,
2 episodes) with a realistic mix of reason codes, and 60 open conflict sets. Every row of the project is
deleted at the end (and before loading, should an earlier run have been interrupted), unless --keep.

Then builds the project's rollup from scratch (manage.py stats_rollup's work, timed) and prints, for the
overview (as the API runs it: under row-level security, as the API role) and the pages' other reads, the p50
and p95 of `--runs` runs (after one warm-up) from the raw query and from the rollup, and their ratio; then
EXPLAIN (ANALYZE, BUFFERS) of the rollup's statements. The machine's load average is printed with the figures.
It needs Django set up before it is imported: its command line, scripts/bench_stats.py, does that first.
"""

from __future__ import annotations

import os
import statistics
import time
from datetime import timedelta

from django.db import connection, transaction
from django.utils import timezone

from privacy.services import project_erase
from hakimem.rowsecurity import API_ROLE, scope_enter
from stats import rollup, selectors
from stats.serializers import overview_out
from traces.models import Trace

PROJECT = "stats-bench"
SUBJECTS = 500
FACTS_PER_SUBJECT = 10  # decisions name facts 0..8 of their subject: fact 9 is never a candidate
EPISODES_PER_SUBJECT = 2
DECISIONS_PER_TRACE = 10  # ranks 1-8 facts, 9-10 episodes
OPEN_CONFLICTS = 60

# The 20 reason codes a fact decision of a non-empty call cycles through: 8 included, 7 over budget,
# 2 below the floor, 1 each of conflict_open, volatility_expired, multi_hop_expansion.
FACT_REASONS = (
    ["included"] * 8
    + ["over_budget"] * 7
    + ["below_relevance_floor"] * 2
    + ["conflict_open", "volatility_expired", "multi_hop_expansion"]
)

RANDOM_VECTOR = "(SELECT array_agg(random()::real) FROM generate_series(1, 384) WHERE n >= 0)::vector"

LOAD_SQL = [
    (
        "facts",
        f"""
     INSERT INTO facts_fact (id, project_id, subject_id, text, text_hash, embedding, status, category, kind,
                             importance, volatility, recorded_from, last_confirmed_at, metadata)
     SELECT md5('{PROJECT}/fact/' || n)::uuid, %(project)s, 'sb-' || (n / {FACTS_PER_SUBJECT}),
            'Bench fact ' || n || ' about topic ' || (n %% 97) || '.',
            encode(sha256(('{PROJECT}/fact/' || n)::bytea), 'hex'), {RANDOM_VECTOR}, 'active',
            (ARRAY['health', 'work', 'family', 'travel'])[1 + n %% 4], 'fact', 0.5, 'permanent',
            now() - interval '90 days', now() - interval '90 days', '{{}}'
       FROM generate_series(0, {SUBJECTS * FACTS_PER_SUBJECT - 1}) AS n
     """,
    ),
    (
        "episodes",
        f"""
     INSERT INTO facts_event (id, project_id, subject_id, text, occurred_at, embedding, metadata, recorded_at)
     SELECT md5('{PROJECT}/event/' || n)::uuid, %(project)s, 'sb-' || (n / {EPISODES_PER_SUBJECT}),
            'Bench episode ' || n || '.', now() - interval '60 days', {RANDOM_VECTOR}, '{{}}', now()
       FROM generate_series(0, {SUBJECTS * EPISODES_PER_SUBJECT - 1}) AS n
     """,
    ),
    # One call in ten comes back empty (no_relevant_memory); the others serve 1-5 facts and an episode.
    (
        "traces",
        f"""
     INSERT INTO traces_trace (id, project_id, subject_id, query, budget_tokens, used_tokens, status, empty_reason,
                               warnings, rendered, facts_served, episodes_served, candidates, embedder, timings,
                               latency_ms, created_at)
     SELECT md5('{PROJECT}/trace/' || i)::uuid, %(project)s, 'sb-' || (i %% {SUBJECTS}), 'bench question ' || i, 900,
            CASE WHEN i %% 10 = 0 THEN 0 ELSE 200 + i %% 500 END, 'ok',
            CASE WHEN i %% 10 = 0 THEN 'no_relevant_memory' END, '[]', '',
            CASE WHEN i %% 10 = 0 THEN 0 ELSE 1 + i %% 5 END, CASE WHEN i %% 10 = 0 THEN 0 ELSE 1 END, 8, 'hashing',
            '{{"embed": 1.0, "retrieve": 5.0}}', 5 + (i %% 97) * 0.5 + random() * 3,
            now() - interval '1 minute' - (i::float8 / %(traces)s) * interval '29 days 23 hours'
       FROM generate_series(0, %(traces)s - 1) AS i
     """,
    ),
    (
        "decisions",
        f"""
     INSERT INTO traces_decision (trace_id, project_id, item_type, fact_id, event_id, decision, reason_code, rank, score,
                                  similarity, cosine_distance, text_rank, recency, tokens, entity)
     SELECT md5('{PROJECT}/trace/' || i)::uuid, '{PROJECT}',
            CASE WHEN r <= 8 THEN 'fact' ELSE 'episode' END,
            CASE WHEN r <= 8 THEN md5('{PROJECT}/fact/' || ((i %% {SUBJECTS}) * {FACTS_PER_SUBJECT}
                                                           + (i + r) %% ({FACTS_PER_SUBJECT} - 1)))::uuid END,
            CASE WHEN r > 8 THEN md5('{PROJECT}/event/' || ((i %% {SUBJECTS}) * {EPISODES_PER_SUBJECT} + r - 9))::uuid END,
            m.decision, m.reason_code, CASE WHEN r <= 8 THEN r ELSE r - 8 END,
            0.5, 0.6, 0.4, 0.1, 0.9, 20, ''
       FROM generate_series(0, %(traces)s - 1) AS i
      CROSS JOIN generate_series(1, {DECISIONS_PER_TRACE}) AS r
      CROSS JOIN LATERAL (
            SELECT CASE WHEN i %% 10 = 0 THEN 'below_relevance_floor'
                        WHEN r = 9 THEN 'included'
                        WHEN r = 10 THEN 'over_budget'
                        ELSE (%(fact_reasons)s::text[])[1 + (i * 7 + r) %% {len(FACT_REASONS)}] END AS reason_code) c
       JOIN (VALUES ('included', 'included'), ('multi_hop_expansion', 'included'), ('over_budget', 'excluded'),
                    ('below_relevance_floor', 'excluded'), ('conflict_open', 'blocked'),
                    ('volatility_expired', 'blocked')) AS m(reason_code, decision) USING (reason_code)
     """,
    ),
    (
        "conflict sets",
        f"""
     INSERT INTO facts_conflictset (id, project_id, subject_id, status, signal, signal_detail, similarity, opened_at,
                                    resolved_by, note)
     SELECT md5('{PROJECT}/conflict/' || s)::uuid, %(project)s, 'sb-' || s, 'open', 'negation', '', 0.9,
            now() - s * interval '7 hours', '', ''
       FROM generate_series(0, {OPEN_CONFLICTS - 1}) AS s
     """,
    ),
    (
        "conflict members",
        f"""
     INSERT INTO facts_conflictmember (project_id, conflict_set_id, fact_id, added_at)
     SELECT %(project)s, md5('{PROJECT}/conflict/' || s)::uuid, md5('{PROJECT}/fact/' || (s * {FACTS_PER_SUBJECT} + k))::uuid, now()
       FROM generate_series(0, {OPEN_CONFLICTS - 1}) AS s CROSS JOIN generate_series(0, 1) AS k
     """,
    ),
]

QUERIES = {  # the raw statements the overview and the /stats/ page run without the rollup
    "overview: trace totals": selectors.TRACE_TOTALS_SQL,
    "overview: decisions by reason code": selectors.DECISIONS_BY_REASON_SQL,
    "overview: store": selectors.STORE_SQL,
    "overview: facts never served (count)": selectors.NEVER_SERVED_COUNT_SQL,
}
OVERVIEW_STATEMENTS = {  # the overview's other statements, named in its breakdown
    "store": selectors.STORE_SQL,
    "rollup: latency values at the ranks": selectors.LATENCY_VALUES_SQL,
}
ROLLUP_QUERIES = {  # the rollup's, EXPLAINed
    "rollup: totals and decisions": selectors.ROLLUP_TOTALS_SQL,
    "rollup: latency counts per bucket": selectors.LATENCY_COUNTS_SQL,
    "rollup: latency values at the ranks": selectors.LATENCY_VALUES_SQL,
    "rollup: facts never served (count)": selectors.ROLLUP_NEVER_SERVED_COUNT_SQL,
    "rollup: subjects by calls (page)": selectors.ROLLUP_SUBJECTS_BY_CALLS_SQL,
}


def statement_times(read, runs: int) -> dict[str, tuple[float, float]]:
    """p50 and p95 of each statement `read` runs, by name (ROLLUP_QUERIES, or the statement's first words), over
    `runs` runs after a warm-up: where the overview's time goes, as it runs."""
    names = {sql: name for name, sql in {**QUERIES, **ROLLUP_QUERIES, **OVERVIEW_STATEMENTS}.items()}
    times: dict[str, list[float]] = {}

    def wrapper(execute, sql, params, many, context):
        start = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            times.setdefault(names.get(sql, " ".join(sql.split()[:4])), []).append((time.perf_counter() - start) * 1000)

    read()
    with connection.execute_wrapper(wrapper):
        for _ in range(runs):
            read()
    return {
        name: (statistics.median(t), sorted(t)[min(len(t) - 1, round(0.95 * len(t) + 0.5) - 1)])
        for name, t in times.items()
    }


def execute(sql: str, params: dict) -> float:
    start = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        if cursor.description:
            cursor.fetchall()
    return (time.perf_counter() - start) * 1000


def timed(function) -> float:
    start = time.perf_counter()
    function()
    return (time.perf_counter() - start) * 1000


def percentiles(run, runs: int) -> tuple[float, float]:
    """p50 and p95 (nearest rank) of `runs` runs after a warm-up: the figures are for a server that has the
    project's pages in its buffers."""
    run()
    times = sorted(run() for _ in range(runs))
    return statistics.median(times), times[min(len(times) - 1, round(0.95 * len(times) + 0.5) - 1)]


def load_average() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def cleanup() -> None:
    project_erase(project_id=PROJECT)


def load(traces: int) -> None:
    params = {"project": PROJECT, "traces": traces, "fact_reasons": FACT_REASONS}
    for name, sql in LOAD_SQL:
        ms = execute(sql, params)
        print(f"  loaded {name:<17} {ms / 1000:6.1f} s")
    with connection.cursor() as cursor:
        for table in ("traces_trace", "traces_decision", "facts_fact", "facts_event", "facts_conflictset"):
            cursor.execute(f"VACUUM ANALYZE {table}")


def payload(overview) -> dict:
    """The API's answer, without the age of the oldest conflict (it grows between two calls)."""
    out = overview_out(overview)
    out["open_conflicts"].pop("oldest_age_seconds")
    return out


def run(*, keep: bool, reuse: bool, reuse_rollup: bool, runs: int, traces: int) -> None:

    loaded = "the rows of an earlier run" if reuse else f"{traces:,} traces, {traces * DECISIONS_PER_TRACE:,} decisions"
    print(f"project {PROJECT!r}: {loaded}; {load_average()}")
    if not reuse:
        cleanup()
        load(traces)
    try:
        if not reuse_rollup:
            rollup.stats_rollup_forget(project_id=PROJECT)
        start = time.perf_counter()
        built = rollup.stats_rollup(project_ids=[PROJECT])
        build_s = time.perf_counter() - start
        with connection.cursor() as cursor:
            for table in ("stats_hourtotals", "stats_hourlatencies", "stats_subjectday", "stats_factserved"):
                cursor.execute(f"VACUUM ANALYZE {table}")
            cursor.execute(
                "SELECT relname, n_live_tup, pg_size_pretty(pg_total_relation_size(relid)) FROM pg_stat_user_tables"
                " WHERE relname LIKE 'stats\\_%%' ORDER BY relname"
            )
            sizes = cursor.fetchall()
        print(
            f"  rollup built in {build_s:.1f} s: {built['traces']:,} traces in {built['slices']:,} slices "
            f"({built['days']} transactions); {load_average()}"
        )
        for name, rows, size in sizes:
            print(f"    {name:<22} {rows:>9,} rows {size:>9}")

        now = timezone.now()
        period = selectors.Period(since=now - timedelta(days=30), until=now)
        days = selectors.days_period((now - timedelta(days=29)).date(), now.date())
        print(
            f"  mark {rollup.rolled_until(PROJECT).isoformat()}; the overview's period {period.since.isoformat()} "
            f"to {period.until.isoformat()}"
        )

        raw, rolled = (
            selectors.stats_overview(project_id=PROJECT, period=period, rollup=flag) for flag in (False, True)
        )
        same = payload(raw) == payload(rolled)
        print(
            f"  in the period: {raw.context_calls:,} context calls, {raw.decisions_total:,} decisions, injection rate "
            f"{raw.injection_rate:.3f}, {raw.facts_never_served} facts never served; rollup's payload identical: {same}"
        )
        if not same:
            print(f"    raw    {payload(raw)}\n    rollup {payload(rolled)}")
        page_same = all(
            getattr(selectors, name)(project_id=PROJECT, period=days, rollup=False)
            == getattr(selectors, name)(project_id=PROJECT, period=days, rollup=True)
            for name in ("calls_per_day", "subjects_by_calls", "facts_never_served")
        )
        print(f"  the page's per-day series, top subjects and never-served list identical: {page_same}")

        # As GET /v1/stats/overview runs it: under row-level security, as the API role seeing the project.
        print(f"\n{'':<44} {'raw p50':>9} {'p95':>9} {'rollup p50':>11} {'p95':>9} {'ratio p50':>10}")
        reads = {
            "stats_overview, 30 days (API, row security)": lambda flag: selectors.stats_overview(
                project_id=PROJECT, period=period, rollup=flag
            ),
            "page: calls per day (30 whole days)": lambda flag: selectors.calls_per_day(
                project_id=PROJECT, period=days, rollup=flag
            ),
            "page: subjects by calls": lambda flag: selectors.subjects_by_calls(
                project_id=PROJECT, period=days, rollup=flag
            ),
            "page: facts never served (list)": lambda flag: selectors.facts_never_served(
                project_id=PROJECT, period=days, rollup=flag
            ),
        }
        for name, read in reads.items():
            # Each read in its own transaction, as a request runs (after a raw read of 10M decisions, later reads in
            # the same transaction took ~20 % longer).
            def request(flag, read=read, api="API" in name):
                with transaction.atomic():
                    if api:
                        scope_enter(API_ROLE, PROJECT)
                    read(flag)
                    transaction.set_rollback(True)

            rollup_p50, rollup_p95 = percentiles(lambda: timed(lambda: request(True)), runs)
            raw_p50, raw_p95 = percentiles(lambda: timed(lambda: request(False)), runs)
            print(
                f"  {name:<42} {raw_p50:9.1f} {raw_p95:9.1f} {rollup_p50:11.1f} {rollup_p95:9.1f} {raw_p50 / rollup_p50:9.1f}x"
            )
        print(f"  ({runs} runs each after a warm-up, ms; {load_average()})\n")

        def overview_request():
            with transaction.atomic():
                scope_enter(API_ROLE, PROJECT)
                selectors.stats_overview(project_id=PROJECT, period=period)
                transaction.set_rollback(True)

        breakdown = statement_times(overview_request, runs)
        for name, (p50, p95) in breakdown.items():
            print(f"  the rollup's overview, statement {name:<40} p50 {p50:8.1f} ms  p95 {p95:8.1f} ms")
        print(f"  ({load_average()})\n")

        # The loaded calls end when the load ran, so by now the raw part after the mark is empty. As the 5-minute
        # job leaves a live project, the raw part after the mark is ROLLUP_LAG and up to a slice of calls: timed
        # on a period ending at the last loaded call with the mark moved back that far (in a rolled-back
        # transaction). Its payload is not compared: the hour and day rows of the moved mark's hour hold calls
        # past it, which the raw part counts again (the same amount of work as a true mark there).
        last = Trace.objects.filter(project_id=PROJECT).latest("created_at").created_at + timedelta(seconds=1)
        live = selectors.Period(since=last - timedelta(days=30), until=last)
        for lag in (rollup.ROLLUP_LAG, rollup.ROLLUP_LAG + rollup.SLICE):
            with transaction.atomic():
                moved = rollup.floor_to(last - lag, rollup.SLICE)
                rollup.RollupMark.objects.filter(project_id=PROJECT).update(rolled_until=moved)
                tail = Trace.objects.filter(project_id=PROJECT, created_at__gte=moved).count()

                def live_request():
                    with transaction.atomic():  # a savepoint: the moved mark stays
                        scope_enter(API_ROLE, PROJECT)
                        selectors.stats_overview(project_id=PROJECT, period=live)
                        transaction.set_rollback(True)

                p50, p95 = percentiles(lambda: timed(live_request), runs)
                transaction.set_rollback(True)
            print(
                f"  stats_overview (API), the mark {(last - moved).total_seconds() / 60:.0f} min before the period's end "
                f"({tail:,} calls raw): p50 {p50:.1f} ms  p95 {p95:.1f} ms; {load_average()}"
            )
        print()

        params = {"project_id": PROJECT, "since": period.since, "until": period.until, "limit": selectors.TOP_SUBJECTS}
        for name, sql in QUERIES.items():
            p50, p95 = percentiles(lambda sql=sql: execute(sql, params), runs)
            print(f"  raw {name:<45} p50 {p50:8.1f} ms  p95 {p95:8.1f} ms")
        mark = rollup.rolled_until(PROJECT)
        hours = selectors._split(mark, period, rollup.HOUR)
        explained = {name: {**params, **hours} for name in ROLLUP_QUERIES}
        for name in ("rollup: latency counts per bucket", "rollup: latency values at the ranks"):
            explained[name] = {**params, **selectors._by_day(hours)}
        explained["rollup: facts never served (count)"] = {**params, **selectors._served_split(mark, period)}
        slices_since = rollup.RollupMark.objects.get(project_id=PROJECT).slices_since
        explained["rollup: totals and decisions"] = {**params, **selectors._split_slices(mark, slices_since, period)}
        explained["rollup: subjects by calls (page)"] = {
            **params,
            **selectors._split(mark, days, rollup.DAY),
            "since": days.since,
            "until": days.until,
        }
        counts = selectors.fetch_dicts(selectors.LATENCY_COUNTS_SQL, explained["rollup: latency counts per bucket"])
        middle = sum(row["calls"] for row in counts) // 2
        for row in counts:  # the bucket holding the median, at its two ranks: a typical values read
            if middle < row["calls"]:
                explained["rollup: latency values at the ranks"].update(
                    groups=[None, None], buckets=[row["bucket"]] * 2, ranks=[middle, middle + 1]
                )
                break
            middle -= row["calls"]
        for name, sql in ROLLUP_QUERIES.items():
            print(f"\nEXPLAIN (ANALYZE, BUFFERS) {name}:\n")
            with connection.cursor() as cursor:
                cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, explained[name])
                print("\n".join(row[0] for row in cursor.fetchall()))
    finally:
        if not keep:
            cleanup()
            print(f"\nproject {PROJECT!r} deleted")
