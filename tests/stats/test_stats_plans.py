"""The stats queries read one project's period through traces_trace_project_time, as their `-- uses:` lines say,
when the table holds a year of traces from several projects. (scripts/bench_stats.py times them at 1M decisions.)"""

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from hakimem.rowsecurity import API_ROLE, scope_enter
from stats import selectors
from tests.conftest import PROJECT

pytestmark = pytest.mark.django_db

TRACES_PER_PROJECT = 12_000  # a year of calls, a thirtieth of them in the period
DECISIONS_PER_TRACE = 1  # a real call has ~130; one is enough for the planner to weigh the join by the data


@pytest.fixture
def a_year_of_traces():
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO traces_trace (id, project_id, subject_id, query, budget_tokens, used_tokens, status, warnings,
                                      rendered, facts_served, episodes_served, candidates, embedder, timings,
                                      latency_ms, created_at)
            SELECT gen_random_uuid(), p.project_id, 's-' || (i %% 50), 'q', 900, 10, 'ok', '[]', '', i %% 3, 0, 3,
                   'hashing', '{}', 5 + i %% 17, now() - (i * interval '365 days' / %(n)s)
              FROM generate_series(1, %(n)s) AS i
             CROSS JOIN (VALUES (%(project)s), ('proj-b'), ('proj-c')) AS p(project_id)
            """,
            {"n": TRACES_PER_PROJECT, "project": PROJECT},
        )
        # Decisions too: with the table empty its row estimate is the planner's guess for a table never
        # analysed, or whatever an earlier test left in its statistics, and the plan of the decisions query
        # followed the suite's order instead of the data.
        cursor.execute(
            """
            INSERT INTO traces_decision (trace_id, project_id, item_type, fact_id, decision, reason_code, rank, tokens,
                                         entity)
            SELECT t.id, t.project_id, 'fact', gen_random_uuid(), 'included', 'included', r, 10, ''
              FROM traces_trace t CROSS JOIN generate_series(1, %(per_trace)s) AS r
            """,
            {"per_trace": DECISIONS_PER_TRACE},
        )
        cursor.execute("ANALYZE traces_trace, traces_decision")


@pytest.mark.parametrize(
    "name", ["TRACE_TOTALS_SQL", "DECISIONS_BY_REASON_SQL", "CALLS_PER_DAY_SQL", "SUBJECTS_BY_CALLS_SQL"]
)
def test_period_queries_range_scan_the_project_time_index(a_year_of_traces, name):
    now = timezone.now()
    params = {"project_id": PROJECT, "since": now - timedelta(days=30), "until": now, "limit": 10}
    scope_enter(API_ROLE, PROJECT)  # as GET /v1/stats/overview runs it: under row-level security
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + getattr(selectors, name), params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "traces_trace_project_time" in plan, plan
    assert "Seq Scan on traces_trace" not in plan, plan
