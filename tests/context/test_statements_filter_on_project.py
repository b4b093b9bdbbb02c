"""Every statement of the hot paths filters every scoped table it names on project_id (docs/scaling.md): on a
database distributed by project, such a statement runs on the one shard holding the project. The statements are
captured as the API runs them and parsed (tests/sqlscope.py); the SQL constants of the retrieval path are parsed
too, the branches a test call does not take included."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from context import consolidation, retrieval, retrieval_asof, retrieval_sql
from facts.models import ConflictSet
from hakimem.distribution import DISTRIBUTED
from tests.conftest import PROJECT
from tests.facts.factories import ConflictSetFactory, EventFactory, FactFactory, IdentityBlockFactory, ProcedureFactory
from tests.sqlscope import Statement, tokenize
from traces import selectors as trace_selectors
from traces import services as trace_services
from traces.models import Decision

SCOPED = set(DISTRIBUTED)


def unfiltered(sql: str) -> list[str]:
    return Statement(sql).unfiltered(SCOPED)


def captured(call) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        call()
    return [q["sql"] for q in queries.captured_queries]


def assert_all_filtered(statements: list[str]) -> None:
    offenders = {sql: missing for sql in statements if (missing := unfiltered(sql))}
    assert not offenders, "\n\n".join(f"{missing}\n{sql}" for sql, missing in offenders.items())


# --- the parser finds what is missing ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "sql, missing",
    [
        ("SELECT * FROM facts_fact f WHERE f.project_id = %(p)s AND f.subject_id = %(s)s", []),
        (
            'SELECT "facts_fact"."id" FROM "facts_fact" WHERE ("facts_fact"."id" IN (%s) AND "facts_fact"."project_id" = %s)',
            [],
        ),
        ("SELECT * FROM facts_fact f WHERE f.id = %(id)s", ["facts_fact f"]),
        ("SELECT * FROM facts_fact f WHERE f.project_id <> %(p)s", ["facts_fact f"]),
        ("SELECT * FROM facts_fact f WHERE NOT (f.project_id = %(p)s)", ["facts_fact f"]),
        ("SELECT * FROM facts_fact f WHERE f.project_id = %(p)s OR f.id = %(id)s", ["facts_fact f"]),
        (
            "SELECT * FROM facts_fact f WHERE (f.project_id = %(p)s AND f.id = 1) OR (f.project_id = %(q)s AND f.id = 2)",
            [],
        ),
        ("SELECT * FROM facts_fact f WHERE (f.project_id = %(p)s AND f.id = 1) OR (f.id = 2)", ["facts_fact f"]),
        # a join is filtered through a filtered table's project_id, not through its id alone
        (
            "SELECT * FROM traces_decision d JOIN facts_fact f ON f.id = d.fact_id AND f.project_id = d.project_id"
            " WHERE d.project_id = %(p)s",
            [],
        ),
        (
            "SELECT * FROM traces_decision d JOIN facts_fact f ON f.id = d.fact_id WHERE d.project_id = %(p)s",
            ["facts_fact f"],
        ),
        # correlated subqueries see the enclosing block's references
        (
            "SELECT * FROM facts_fact f WHERE f.project_id = 'x' AND EXISTS (SELECT 1 FROM facts_conflictmember m"
            " WHERE m.fact_id = f.id AND m.project_id = f.project_id)",
            [],
        ),
        (
            "SELECT * FROM facts_fact f WHERE f.project_id = 'x' AND EXISTS (SELECT 1 FROM facts_conflictmember m"
            " WHERE m.fact_id = f.id)",
            ["facts_conflictmember m"],
        ),
        (
            'SELECT * FROM "facts_fact" WHERE "facts_fact"."project_id" = %s AND EXISTS (SELECT 1 FROM "facts_conflictmember"'
            ' U0 WHERE U0."project_id" = ("facts_fact"."project_id"))',
            [],
        ),
        ("UPDATE facts_fact SET status = 'retracted' WHERE id = ANY(%s)", ["facts_fact facts_fact"]),
        ("UPDATE facts_fact SET status = 'retracted' WHERE id = ANY(%s) AND project_id = %s", []),
        (
            "DELETE FROM traces_decision d USING traces_trace t WHERE d.trace_id = t.id AND t.project_id = %(p)s",
            ["traces_decision d"],
        ),
        ('INSERT INTO "facts_event" ("project_id", "subject_id") VALUES (%s, %s)', []),
        (
            'INSERT INTO "facts_conflictmember" ("conflict_set_id", "fact_id") VALUES (%s, %s)',
            ["INSERT INTO facts_conflictmember"],
        ),
        # tables that are not distributed are not judged
        ('SELECT * FROM "hakimem_apikey" WHERE "hakimem_apikey"."key_hash" = %s', []),
    ],
)
def test_the_parser_reports_scoped_tables_without_a_project_filter(sql, missing):
    assert unfiltered(sql) == missing


def test_the_tokenizer_keeps_strings_and_nesting():
    tokens = tokenize("SELECT 'a;(b' FROM t WHERE (x = E'\\n') -- (\n")
    assert [t.kind for t in tokens] == ["ident", "string", "ident", "ident", "ident", "group"]


# --- the retrieval path's SQL, every branch ---------------------------------------------------------------


@pytest.mark.parametrize(
    "name, sql",
    [
        ("hybrid, graph", retrieval_sql.HYBRID_CANDIDATES_SQL),
        ("hybrid, exact", retrieval_sql.HYBRID_EXACT_CANDIDATES_SQL),
        ("lexical (degraded)", retrieval_sql.LEXICAL_CANDIDATES_SQL),
        ("episodes, graph", retrieval_sql.EPISODES_HYBRID_SQL),
        ("episodes, exact", retrieval_sql.EPISODES_HYBRID_EXACT_SQL),
        ("episodes, lexical (degraded)", retrieval_sql.EPISODES_LEXICAL_SQL),
        *(
            (f"facts and episodes together, facts {'exact' if f else 'graph'}, events {'exact' if e else 'graph'}", sql)
            for (f, e), sql in retrieval_sql.TOGETHER_SQL.items()
        ),
        ("facts and episodes together, the whole scope", retrieval_sql.WHOLE_SCOPE_SQL),
        ("procedures, graph", retrieval_sql.PROCEDURES_HYBRID_SQL),
        ("procedures, exact", retrieval_sql.PROCEDURES_HYBRID_EXACT_SQL),
        ("procedures, lexical (degraded)", retrieval_sql.PROCEDURES_LEXICAL_SQL),
        ("multi-hop", retrieval_sql.multi_hop_sql(2)),
        ("multi-hop, a name walked", retrieval_sql.multi_hop_sql(2, {1})),
        ("multi-hop within a scope read whole", retrieval_sql.multi_hop_within_sql(2)),
        ("a large scope's word counts", retrieval_sql.SCOPE_WORDS_SQL),
        ("query-time contradictions", retrieval_sql.CONTRADICTION_PAIRS_SQL),
        ("access signal", trace_selectors.ACCESS_FREQUENCY_SQL),
        ("replay: facts as of", retrieval_asof.FACTS_AS_OF_SQL),
        ("replay: events as of", retrieval_asof.EVENTS_AS_OF_SQL),
        ("an empty call's scope", retrieval_sql.SCOPE_STATE_SQL),
        ("replay: an empty call's scope as of", retrieval_asof.SCOPE_STATE_AS_OF_SQL),
        ("trace write", trace_services.TRACE_INSERT_SQL),
        ("inspect: decisions", trace_selectors.TRACE_DECISIONS_SQL),
        ("consolidate: a project's scopes", consolidation.PROJECT_SCOPES_SQL),
        ("consolidate: superseded pairs", consolidation.SUPERSEDED_PAIRS_SQL),
        ("consolidate: the pairs' facts", consolidation.PAIR_FACTS_SQL),
        ("consolidate: a project's access counts", trace_services.PROJECT_ACCESS_PRUNE_BATCH_SQL),
    ],
)
def test_every_retrieval_statement_filters_every_table_on_the_project(name, sql):
    assert unfiltered(sql) == []


# --- the hot paths as the API runs them -------------------------------------------------------------------


def _ask(api, query):
    response = api.post(
        "/v1/context",
        {"project_id": PROJECT, "subject_id": "alice", "query": query, "budget_tokens": 4000},
        format="json",
    )
    assert response.status_code == 200, response.content
    return response.json()


@pytest.fixture
def memory(db):
    """A scope with facts linked by a name (multi-hop), an episode and an open conflict set."""
    for i in range(150):  # more than the candidates a call keeps: Julien's fact is found only by his name
        FactFactory(text=f"Marie wrote note {i} about her brother in the family diary.")
    FactFactory(text="Marie's brother is called Julien.")
    FactFactory(text="Julien teaches chemistry in Montreal.")
    EventFactory(text="Marie called her brother on Sunday.")
    ConflictSetFactory()


@pytest.mark.django_db
@pytest.mark.parametrize("dense_exact", [True, False], ids=["exact", "graph"])
def test_a_context_call_with_multi_hop_and_its_trace_write(api, memory, monkeypatch, dense_exact):
    monkeypatch.setattr(retrieval.TableStats, "dense_exact", lambda self, p, s, project_wide=False: dense_exact)
    packet = {}
    statements = captured(lambda: packet.update(_ask(api, "Who is Marie's brother?")))
    assert Decision.objects.filter(trace_id=packet["trace_id"], reason_code="multi_hop_expansion").exists()
    assert any("INSERT INTO traces_trace" in sql for sql in statements)
    assert_all_filtered(statements)


@pytest.fixture
def tiered_memory(db):
    """Identity blocks (the project's and the subject's), procedures, and two facts that contradict each other,
    written around the write path (no conflict set yet: the call finds the pair)."""
    IdentityBlockFactory(subject_id="", name="persona", text="You are Alice's gardening assistant.")
    IdentityBlockFactory(name="tone", text="Answer briefly.", position=1)
    ProcedureFactory(title="Garden report", text="Write the garden report as a short list, beds first, then pests.")
    ProcedureFactory(subject_id="", title="Pest check", text="Look under the leaves of every bed for aphids.")
    now = timezone.now()
    FactFactory(text="Alice is allergic to peanuts.", recorded_from=now - timedelta(days=30))
    FactFactory(text="Alice is not allergic to peanuts.", recorded_from=now)
    FactFactory(text="Alice's garden has six raised beds.")
    EventFactory(text="Alice planted garlic in the garden.")


@pytest.mark.django_db
@pytest.mark.parametrize("dense_exact", [True, False], ids=["exact", "graph"])
def test_a_tiered_call_and_its_trace_write(api, tiered_memory, monkeypatch, dense_exact):
    monkeypatch.setattr(retrieval.TableStats, "dense_exact", lambda self, p, s, project_wide=False: dense_exact)
    traces = []

    def ask():
        response = api.post(
            "/v1/context",
            {
                "project_id": PROJECT,
                "subject_id": "alice",
                "tiers": True,
                "query": "Is Alice allergic to peanuts? Write the garden report.",
            },
            format="json",
        )
        assert response.status_code == 200, response.content
        traces.append(response.json()["trace_id"])

    statements = captured(ask) + captured(ask)  # the second call finds the first one's access counts
    # the first call served identity blocks and procedures, and found the contradiction (proposed to curators)
    kinds = set(Decision.objects.filter(trace_id=traces[0]).values_list("item_type", flat=True))
    assert {"identity", "procedure", "fact"} <= kinds
    assert Decision.objects.filter(trace_id=traces[0], reason_code="superseded_in_context").exists()
    assert ConflictSet.objects.filter(project_id=PROJECT, status="open").exists()
    for table in ("facts_identityblock", "facts_procedure", "traces_itemaccess", "facts_conflictmember"):
        assert any(table in sql for sql in statements), table
    assert_all_filtered(statements)


@pytest.mark.django_db
def test_consolidation_of_a_project(api, tiered_memory):
    response = api.post(
        "/v1/context",
        {"project_id": PROJECT, "subject_id": "alice", "tiers": True, "query": "Is Alice allergic to peanuts?"},
        format="json",
    )
    assert response.status_code == 200, response.content
    statements = captured(lambda: consolidation.consolidate(project_id=PROJECT))
    assert any("traces_itemaccess" in sql for sql in statements)
    assert_all_filtered(statements)


@pytest.mark.django_db
def test_inspect(api, memory):
    trace_id = _ask(api, "Who is Marie's brother?")["trace_id"]
    statements = captured(lambda: api.get(f"/v1/inspect/{trace_id}"))
    assert any("traces_decision" in sql for sql in statements)
    assert_all_filtered(statements)


NANTES = "Paul lives in Nantes with his wife and their two children."
BORDEAUX = "Paul lives in Bordeaux with his wife and their two children."
LILLE = "Paul lives in Lille with his wife and their two children."


@pytest.mark.django_db
def test_fact_and_event_batch_writes(api):
    def post(path, items):
        response = api.post(
            path,
            {path.split("/")[-1]: [{"project_id": PROJECT, "subject_id": "alice", **i} for i in items]},
            format="json",
        )
        assert response.status_code == 201, response.content
        return response.json()

    statements = []
    events = []
    statements += captured(
        lambda: events.extend(
            post(
                "/v1/events",
                [
                    {"text": "Paul moved house.", "occurred_at": "2026-01-01T00:00:00Z"},
                    {"text": "Paul met Julien.", "occurred_at": "2026-01-02T00:00:00Z"},
                ],
            )["events"]
        )
    )
    statements += captured(lambda: post("/v1/facts", [{"text": NANTES, "source_event_id": events[0]["id"]}]))
    # a contradiction (opens a set), another (joins it), a repeat (re-confirms) and a fact from an episode
    statements += captured(
        lambda: post(
            "/v1/facts",
            [
                {"text": BORDEAUX},
                {"text": LILLE},
                {"text": NANTES},
                {"text": "Julien is Paul's friend.", "source_event_id": events[1]["id"]},
            ],
        )
    )
    statements += captured(lambda: post("/v1/facts", [{"text": BORDEAUX.upper()}]))
    assert any('INSERT INTO "facts_conflictmember"' in sql for sql in statements)
    assert_all_filtered(statements)


@pytest.mark.django_db
def test_erasure_of_a_subject_and_of_a_category(api, memory):
    _ask(api, "Who is Marie's brother?")
    response = api.patch("/v1/project", {"consent_required": True, "consent_write_policy": "store"}, format="json")
    assert response.status_code == 200
    FactFactory(text="Alice takes insulin every morning.", category="health")
    statements = captured(lambda: api.delete(f"/v1/subjects/alice/consents/health?project_id={PROJECT}&erase=true"))
    statements += captured(lambda: api.delete(f"/v1/subjects/alice?project_id={PROJECT}"))
    assert any("DELETE FROM facts_fact" in sql for sql in statements)
    assert_all_filtered(statements)
