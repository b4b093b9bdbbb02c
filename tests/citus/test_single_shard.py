"""On the Citus cluster (make citus), every statement a write and a context call send reaches one shard: the
statements are captured as the API runs them, and Citus's EXPLAIN of each one that names a distributed table must
show a single task (a router query) and no INSERT ... SELECT through the coordinator (docs/scaling.md)."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from hakimem.distribution import DISTRIBUTED
from tests.conftest import PROJECT
from tests.facts.factories import ConflictSetFactory, EventFactory, FactFactory
from tests.sqlscope import _TOKEN, Statement

pytestmark = [pytest.mark.citus, pytest.mark.django_db(transaction=True)]

TASK_COUNT = re.compile(r"Task Count: (\d+)")


def statements_of(sql: str) -> list[str]:
    """The statements of one execute (a request's role and project, the trace's lock and INSERT are sent as two)."""
    parts, depth, start, pos = [], 0, 0, 0
    while pos < len(sql):
        m = _TOKEN.match(sql, pos)
        pos = m.end()
        text = m.group(0)
        depth += text == "("
        depth -= text == ")"
        if text == ";" and depth == 0:
            parts.append(sql[start : m.start()])
            start = pos
    parts.append(sql[start:])
    return [p.strip() for p in parts if p.strip()]


def distributed_statements(captured: list[str]) -> list[str]:
    found = []
    for sql in captured:
        for statement in statements_of(sql):
            if statement.split(None, 1)[0].upper() not in ("SELECT", "INSERT", "UPDATE", "DELETE", "WITH"):
                continue
            if {ref.table for ref in Statement(statement).refs} & set(DISTRIBUTED):
                found.append(statement)
    return found


def plan(statement: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (COSTS OFF) " + statement.replace("%", "%%"))
        return "\n".join(row[0] for row in cursor.fetchall())


def not_single_shard(captured: list[str]) -> dict[str, str]:
    """Each captured statement on a distributed table whose plan is not one task on one shard, with that plan."""
    offenders = {}
    for statement in distributed_statements(captured):
        text = plan(statement)
        tasks = [int(n) for n in TASK_COUNT.findall(text)]
        if not tasks or any(n != 1 for n in tasks) or "pull to coordinator" in text or "repartition" in text:
            offenders[statement] = text
    return offenders


def capture(call) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        call()
    return [q["sql"] for q in queries.captured_queries]


def test_the_check_tells_a_single_shard_statement_from_one_sent_to_every_shard(db):
    FactFactory(text="Alice keeps bees.")
    assert not not_single_shard([f"SELECT id FROM facts_fact WHERE project_id = '{PROJECT}' AND subject_id = 'alice'"])
    assert not_single_shard(["SELECT id FROM facts_fact WHERE subject_id = 'alice'"])


def test_a_batch_write_of_facts_and_events_runs_on_one_shard(api):
    def post(path, items):
        response = api.post(
            path,
            {path.split("/")[-1]: [{"project_id": PROJECT, "subject_id": "alice", **i} for i in items]},
            format="json",
        )
        assert response.status_code == 201, response.content
        return response.json()

    events = []
    captured = capture(
        lambda: events.extend(
            post("/v1/events", [{"text": "Paul moved house.", "occurred_at": "2026-01-01T00:00:00Z"}])["events"]
        )
    )
    captured += capture(
        lambda: post("/v1/facts", [{"text": "Paul lives in Nantes with his wife.", "source_event_id": events[0]["id"]}])
    )
    # a contradiction opens a conflict set; a repeat re-confirms
    captured += capture(
        lambda: post(
            "/v1/facts",
            [{"text": "Paul lives in Bordeaux with his wife."}, {"text": "Paul lives in Nantes with his wife."}],
        )
    )
    statements = distributed_statements(captured)
    assert any("facts_conflictmember" in s for s in statements)
    offenders = not_single_shard(captured)
    # Django 5.2's bulk_create of several rows is INSERT ... SELECT * FROM UNNEST(...): a SELECT on no distributed
    # table, whose rows Citus pulls to the coordinator and copies into the shard (correct, one extra hop).
    known = {s for s in offenders if s.startswith('INSERT INTO "facts_conflictmember"') and "FROM UNNEST" in s}
    assert known, "conflict members are now inserted on one shard: drop this exception and docs/scaling.md's"
    unexpected = {s: p for s, p in offenders.items() if s not in known}
    assert not unexpected, "\n\n".join(f"{s}\n{p}" for s, p in unexpected.items())


def test_a_context_call_reads_one_shard(api):
    for i in range(30):
        FactFactory(text=f"Marie wrote note {i} about her brother in the family diary.")
    FactFactory(text="Marie's brother is called Julien.")
    FactFactory(text="Julien teaches chemistry in Montreal.")
    EventFactory(text="Marie called her brother on Sunday.")
    ConflictSetFactory()

    def ask():
        response = api.post(
            "/v1/context",
            {"project_id": PROJECT, "subject_id": "alice", "query": "Who is Marie's brother?", "budget_tokens": 4000},
            format="json",
        )
        assert response.status_code == 200, response.content

    captured = capture(ask)
    statements = distributed_statements(captured)
    assert any("facts_fact" in s for s in statements) and any("facts_event" in s for s in statements)
    reads = [sql for sql in captured if "INSERT INTO traces_trace" not in sql]
    offenders = not_single_shard(reads)
    assert not offenders, "\n\n".join(f"{s}\n{p}" for s, p in offenders.items())


def test_a_context_calls_trace_is_written_and_inspected(api):
    FactFactory(text="Marie's brother is called Julien.")
    response = api.post(
        "/v1/context", {"project_id": PROJECT, "subject_id": "alice", "query": "Who is Marie's brother?"}, format="json"
    )
    assert response.status_code == 200
    inspected = api.get(f"/v1/inspect/{response.json()['trace_id']}")
    assert inspected.status_code == 200, inspected.content
    assert [d["reason_code"] for d in inspected.json()["decisions"]] == ["included"]


@pytest.mark.xfail(
    strict=True,
    reason="Citus runs the trace's three INSERT ... SELECTs (trace, access counts, "
    "decisions) by pulling their rows to the coordinator: one shard, extra hops "
    "(docs/scaling.md)",
)
def test_a_context_calls_trace_write_runs_on_one_shard(api):
    FactFactory(text="Marie's brother is called Julien.")
    captured = capture(
        lambda: api.post(
            "/v1/context",
            {"project_id": PROJECT, "subject_id": "alice", "query": "Who is Marie's brother?"},
            format="json",
        )
    )
    writes = [sql for sql in captured if "INSERT INTO traces_trace" in sql]
    assert writes
    offenders = not_single_shard(writes)
    assert not offenders, "\n\n".join(f"{s}\n{p}" for s, p in offenders.items())


def test_the_prepared_whole_scope_statement_keeps_custom_plans_on_the_cluster(api):
    """A small scope's candidates statement runs prepared (hakimem/postgresql/base.py). Citus makes no distributed plan
    of its generic form ("could not create distributed plan"): PostgreSQL keeps planning it with the call's values,
    each one task on one shard, however often it runs on a connection."""
    FactFactory(text="Marie's brother is called Julien.")
    EventFactory(text="Marie called her brother on Sunday.")
    for i in range(8):  # more than the five custom runs after which PostgreSQL weighs a generic plan
        response = api.post(
            "/v1/context",
            {"project_id": PROJECT, "subject_id": "alice", "query": f"Who is Marie's brother, question {i}?"},
            format="json",
        )
        assert response.status_code == 200, response.content
        assert response.json()["facts"]
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements")
        prepared = cursor.fetchall()
    whole_scope = [(generic, custom) for statement, generic, custom in prepared if "scope_facts" in statement]
    assert len(whole_scope) == 1 and whole_scope[0][0] == 0 and whole_scope[0][1] >= 8, whole_scope
