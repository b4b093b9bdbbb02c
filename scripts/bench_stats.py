"""How fast is GET /v1/stats/overview on a busy project? Loads one, times the overview, cleans up.

    .venv/bin/python scripts/bench_stats.py                 # 100k traces, 1M decisions, 5 runs
    .venv/bin/python scripts/bench_stats.py --traces 20000 --runs 3 --keep

Writes into the development database (the embedded server in var/pgdata, or DATABASE_URL), project
"stats-bench", with INSERT ... SELECT generate_series (no row crosses the wire): 500 subjects with 10 facts
and 2 episodes each, `--traces` context calls spread over the last 30 days, 10 decisions per call (8 facts,
2 episodes) with a realistic mix of reason codes, and 60 open conflict sets. Every row of the project is
deleted at the end (and before loading, should an earlier run have been interrupted), unless --keep.

Prints the p50 of `--runs` runs (after one warm-up) of stats_overview and of each query of stats/selectors.py,
then EXPLAIN (ANALYZE, BUFFERS) of the slowest query.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

if __package__ in (None, ""):  # run as `python scripts/bench_stats.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts._django import setup  # noqa: E402

setup()

from django.db import connection, transaction  # noqa: E402
from django.utils import timezone  # noqa: E402

from facts.services import project_erase  # noqa: E402
from hakimem.rowsecurity import API_ROLE, scope_enter  # noqa: E402
from stats import selectors  # noqa: E402

PROJECT = "stats-bench"
SUBJECTS = 500
FACTS_PER_SUBJECT = 10  # decisions name facts 0..8 of their subject: fact 9 is never a candidate
EPISODES_PER_SUBJECT = 2
DECISIONS_PER_TRACE = 10  # ranks 1-8 facts, 9-10 episodes
OPEN_CONFLICTS = 60

# The 20 reason codes a fact decision of a non-empty call cycles through: 8 included, 7 over budget,
# 2 below the floor, 1 each of conflict_open, volatility_expired, multi_hop_expansion.
FACT_REASONS = (
    ["included"] * 8 + ["over_budget"] * 7 + ["below_relevance_floor"] * 2
    + ["conflict_open", "volatility_expired", "multi_hop_expansion"]
)

RANDOM_VECTOR = "(SELECT array_agg(random()::real) FROM generate_series(1, 384) WHERE n >= 0)::vector"

LOAD_SQL = [
    ("facts", f"""
     INSERT INTO facts_fact (id, project_id, subject_id, text, text_hash, embedding, status, category, kind,
                             importance, volatility, recorded_from, last_confirmed_at, metadata)
     SELECT md5('{PROJECT}/fact/' || n)::uuid, %(project)s, 'sb-' || (n / {FACTS_PER_SUBJECT}),
            'Bench fact ' || n || ' about topic ' || (n %% 97) || '.',
            encode(sha256(('{PROJECT}/fact/' || n)::bytea), 'hex'), {RANDOM_VECTOR}, 'active',
            (ARRAY['health', 'work', 'family', 'travel'])[1 + n %% 4], 'fact', 0.5, 'permanent',
            now() - interval '90 days', now() - interval '90 days', '{{}}'
       FROM generate_series(0, {SUBJECTS * FACTS_PER_SUBJECT - 1}) AS n
     """),
    ("episodes", f"""
     INSERT INTO facts_event (id, project_id, subject_id, text, occurred_at, embedding, metadata, recorded_at)
     SELECT md5('{PROJECT}/event/' || n)::uuid, %(project)s, 'sb-' || (n / {EPISODES_PER_SUBJECT}),
            'Bench episode ' || n || '.', now() - interval '60 days', {RANDOM_VECTOR}, '{{}}', now()
       FROM generate_series(0, {SUBJECTS * EPISODES_PER_SUBJECT - 1}) AS n
     """),
    # One call in ten comes back empty (no_relevant_memory); the others serve 1-5 facts and an episode.
    ("traces", f"""
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
     """),
    ("decisions", f"""
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
     """),
    ("conflict sets", f"""
     INSERT INTO facts_conflictset (id, project_id, subject_id, status, signal, signal_detail, similarity, opened_at,
                                    resolved_by, note)
     SELECT md5('{PROJECT}/conflict/' || s)::uuid, %(project)s, 'sb-' || s, 'open', 'negation', '', 0.9,
            now() - s * interval '7 hours', '', ''
       FROM generate_series(0, {OPEN_CONFLICTS - 1}) AS s
     """),
    ("conflict members", f"""
     INSERT INTO facts_conflictmember (project_id, conflict_set_id, fact_id, added_at)
     SELECT %(project)s, md5('{PROJECT}/conflict/' || s)::uuid, md5('{PROJECT}/fact/' || (s * {FACTS_PER_SUBJECT} + k))::uuid, now()
       FROM generate_series(0, {OPEN_CONFLICTS - 1}) AS s CROSS JOIN generate_series(0, 1) AS k
     """),
]

QUERIES = {  # everything the overview and the /stats/ page run
    "overview: trace totals": selectors.TRACE_TOTALS_SQL,
    "overview: decisions by reason code": selectors.DECISIONS_BY_REASON_SQL,
    "overview: store": selectors.STORE_SQL,
    "overview: facts never served (count)": selectors.NEVER_SERVED_COUNT_SQL,
    "page: calls per day": selectors.CALLS_PER_DAY_SQL,
    "page: subjects by calls": selectors.SUBJECTS_BY_CALLS_SQL,
    "page: facts never served (list)": selectors.NEVER_SERVED_SQL,
}


def execute(sql: str, params: dict) -> float:
    start = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        if cursor.description:
            cursor.fetchall()
    return (time.perf_counter() - start) * 1000


def p50(run, runs: int) -> float:
    run()  # warm-up: the figures are for a server that has the project's pages in its buffers
    return statistics.median(run() for _ in range(runs))


def cleanup() -> None:
    project_erase(project_id=PROJECT)


def load(traces: int) -> None:
    params = {"project": PROJECT, "traces": traces, "fact_reasons": FACT_REASONS}
    for name, sql in LOAD_SQL:
        ms = execute(sql, params)
        print(f"  loaded {name:<17} {ms / 1000:6.1f} s")
    with connection.cursor() as cursor:
        for table in ("traces_trace", "traces_decision", "facts_fact", "facts_event", "facts_conflictset"):
            cursor.execute(f"ANALYZE {table}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--keep", action="store_true", help="leave the project's rows in the database")
    args = parser.parse_args()

    print(f"project {PROJECT!r}: {args.traces:,} traces, {args.traces * DECISIONS_PER_TRACE:,} decisions")
    cleanup()
    try:
        load(args.traces)
        now = timezone.now()
        period = selectors.Period(since=now - timedelta(days=30), until=now)
        params = {"project_id": PROJECT, "since": period.since, "until": period.until, "limit": selectors.TOP_SUBJECTS}

        overview = selectors.stats_overview(project_id=PROJECT, period=period)
        print(f"  in the period: {overview.context_calls:,} context calls, {overview.decisions_total:,} decisions, "
              f"injection rate {overview.injection_rate:.3f}, {overview.facts_never_served} facts never served")

        def timed_overview() -> float:
            start = time.perf_counter()
            selectors.stats_overview(project_id=PROJECT, period=period)
            return (time.perf_counter() - start) * 1000

        figure = p50(timed_overview, args.runs)
        print(f"\nstats_overview over 30 days: p50 {figure:.1f} ms ({args.runs} runs after a warm-up)")
        # As GET /v1/stats/overview runs it: under row-level security, as the API role seeing the project.
        with transaction.atomic():
            scope_enter(API_ROLE, PROJECT)
            secured = p50(timed_overview, args.runs)
            transaction.set_rollback(True)
        print(f"stats_overview under row-level security (as {API_ROLE}): p50 {secured:.1f} ms\n")
        timings = {name: p50(lambda sql=sql: execute(sql, params), args.runs) for name, sql in QUERIES.items()}
        for name, ms in timings.items():
            print(f"  {name:<40} p50 {ms:8.1f} ms")
        slowest = max(timings, key=timings.get)
        print(f"\nEXPLAIN (ANALYZE, BUFFERS) of the slowest query, {slowest}:\n")
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + QUERIES[slowest], params)
            print("\n".join(row[0] for row in cursor.fetchall()))
    finally:
        if not args.keep:
            cleanup()
            print(f"\nproject {PROJECT!r} deleted")


if __name__ == "__main__":
    main()
