"""Episodes (events) ranked with facts: one ranking, one candidate limit, one statement for both, the two phases
when a scope is larger than the statistics said, and the event graph's scan tuned like the facts'."""

import pytest
from django.db import connection
from django.utils import timezone

from tests.conftest import PROJECT
from tests.context.calls import ask, decisions
from tests.facts.factories import EventFactory, FactFactory
from traces.models import Decision

pytestmark = pytest.mark.django_db


def test_episodes_fill_what_facts_leave(api):
    FactFactory(text="Alice runs marathons.")
    for i in range(3):
        EventFactory(
            text=f"Alice ran the Lyon marathon edition {i}.",
            occurred_at=timezone.now() - timezone.timedelta(days=30 * i),
        )
    packet = ask(api, "When did Alice run the Lyon marathon?", budget=900)
    assert len(packet["facts"]) == 1 and len(packet["episodes"]) == 3
    assert "Episodes:" in packet["rendered"] and packet["rendered"].index("Facts:") < packet["rendered"].index(
        "Episodes:"
    )
    tight = ask(api, "When did Alice run the Lyon marathon?", budget=15)
    assert len(tight["facts"]) == 1 and len(tight["episodes"]) < 3
    assert tight["used_tokens"] <= 15
    assert "over_budget" in {d.reason_code for d in decisions(tight).values() if d.event_id}


def test_episodes_fill_the_budget_like_facts(api):
    """No fixed cap on episodes: a scope of chat turns stored as events fills the budget with the best turns
    (the 8 nearest of the old cap left most of a 900-token budget empty)."""
    for i in range(40):
        EventFactory(text=f"Alice attended concert {i} with her sister.")
    packet = ask(api, "Which concerts did Alice attend?", budget=2000)
    assert len(packet["episodes"]) == 40
    assert (
        Decision.objects.filter(trace_id=packet["trace_id"], item_type="episode", reason_code="included").count() == 40
    )


def test_the_lexical_leg_reaches_episodes(api, monkeypatch):
    """An episode the dense leg does not bring is still found by its words, through the events' GIN index."""
    from context import retrieval

    for i in range(30):
        EventFactory(text=f"Alice attended concert {i} with her sister.")
    rare = EventFactory(text="The piano tuner came on Tuesday.")
    monkeypatch.setattr(retrieval, "DENSE_TOP_K", 3)
    packet = ask(api, "concert piano tuner", budget=2000)
    assert str(rare.id) in {e["id"] for e in packet["episodes"]}
    decision = Decision.objects.get(trace_id=packet["trace_id"], event_id=rare.id)
    assert decision.reason_code == "included" and decision.text_rank > 0


def test_facts_and_episodes_share_one_ranking_and_one_candidate_limit(api, monkeypatch):
    from context import retrieval

    for i in range(6):
        FactFactory(text=f"Alice keeps bees in hive {i}.")
        EventFactory(text=f"Alice harvested honey from hive {i}.")
    monkeypatch.setattr(retrieval, "CANDIDATE_LIMIT", 5)
    packet = ask(api, "Alice hive honey bees", budget=2000)
    rows = list(Decision.objects.filter(trace_id=packet["trace_id"]).order_by("rank"))
    assert [r.rank for r in rows] == [1, 2, 3, 4, 5]
    assert [r.score for r in rows] == sorted((r.score for r in rows), reverse=True)
    assert len(packet["facts"]) + len(packet["episodes"]) == 5


def _alices_orchard(now, n=40, events=None):
    """`n` facts and `events` (else `n`) events about Alice's orchard, a day apart, alternating."""
    for i in range(n):
        FactFactory(
            text=f"Alice's orchard has {i} apple trees near the river {i % 5}.",
            recorded_from=now - timezone.timedelta(days=2 * i),
        )
    for i in range(n if events is None else events):
        EventFactory(
            text=f"Alice planted {i} apple trees in the orchard by the river.",
            occurred_at=now - timezone.timedelta(days=2 * i + 1),
        )


def _ranked_apart(lookup, qvec):
    """What one statement per table, the assembler's ranking and its cut to the candidate limit keep, in order."""
    from context import retrieval

    return _ranked(retrieval.fact_candidates(lookup, qvec=qvec), retrieval.episode_candidates(lookup, qvec=qvec))


def _ranked(facts, episodes):
    from context.assembler import rank_candidates
    from context.config import PLAIN, default_config
    from context.render import Layout

    pool = [(c, "fact") for c in facts] + [(e, "episode") for e in episodes]
    return [(d.item_type, d.item.id) for d in rank_candidates(pool, default_config(), Layout(), PLAIN, {})]


def _candidate_statements(call) -> tuple:
    """What `call` returns, and which candidates statements it ran, in order: "whole" (WHOLE_SCOPE_SQL) or
    ("two-phase", facts exact, events exact) (TOGETHER_SQL)."""
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        result = call()
    ran = []
    for sql in (q["sql"] for q in queries.captured_queries):
        if "AS scope_facts" in sql:
            ran.append("whole")
        elif "f_dense AS" in sql:
            ran.append(("two-phase", "f_nearest AS" in sql, "e_nearest AS" in sql))
    return result, ran


@pytest.mark.parametrize("whole_scope", [True, False], ids=["whole-scope", "two-phase"])
@pytest.mark.parametrize("facts_exact", [True, False], ids=["facts-exact", "facts-graph"])
@pytest.mark.parametrize("events_exact", [True, False], ids=["events-exact", "events-graph"])
def test_the_statement_of_facts_and_episodes_together_keeps_what_the_two_statements_and_the_ranking_kept(
    monkeypatch, facts_exact, events_exact, whole_scope
):
    """A plain call's one statement (retrieval.candidates_together) returns the candidates, in order, that one statement
    per table followed by the assembler's ranking and its cut to the candidate limit gave: the two phases of both
    tables (TOGETHER_SQL) and, for a scope of at most DENSE_TOP_K rows a table, the whole scope scored
    (WHOLE_SCOPE_SQL), against the per-table statements' exact sort and their graph walk (which finds every row of so
    small a scope)."""
    from context import retrieval
    from facts.selectors import volatility_cutoffs
    from hakimem.embeddings import get_embedder

    exact = {retrieval.FACTS: facts_exact, retrieval.EVENTS: events_exact}
    monkeypatch.setattr(retrieval, "_dense_exact", lambda lookup, table: exact[table])
    monkeypatch.setattr(retrieval, "whole_scope_expected", lambda lookup, dense_k: whole_scope)
    now = timezone.now()
    _alices_orchard(now)
    monkeypatch.setattr(retrieval, "CANDIDATE_LIMIT", 24)
    query = "apple trees by the river orchard"
    lookup = retrieval.lookup_for(
        project_id=PROJECT, subject_id="alice", query=query, now=now, cutoffs=volatility_cutoffs(now)
    )
    qvec = get_embedder().embed_query(query, project_id=lookup.project_id)
    (facts, episodes, _), ran = _candidate_statements(lambda: retrieval.candidates_together(lookup, qvec=qvec))
    assert facts and episodes and len(facts) + len(episodes) == 24
    assert ran == ["whole" if whole_scope else ("two-phase", facts_exact, events_exact)]
    assert _ranked(facts, episodes) == _ranked_apart(lookup, qvec)


@pytest.mark.parametrize("facts, events", [(30, 30), (8, 30), (30, 8)], ids=["both", "events", "facts"])
def test_a_scope_larger_than_the_statistics_said_is_ranked_by_the_two_phases(monkeypatch, facts, events):
    """The statistics may think a scope small when it is not (a day of writes since the last ANALYZE): the whole-scope
    statement then read a pool cut at dense_k + 1 rows of either table, and the call takes its candidates from
    TOGETHER_SQL instead, the same candidates as the two statements per table."""
    from context import retrieval
    from context.config import default_config
    from facts.selectors import volatility_cutoffs
    from hakimem.embeddings import get_embedder

    monkeypatch.setattr(retrieval, "whole_scope_expected", lambda lookup, dense_k: True)
    now = timezone.now()
    _alices_orchard(now, facts, events)
    config = default_config().with_overrides({"dense_top_k": 12})  # more than 12 rows in one table at least
    query = "apple trees by the river orchard"
    monkeypatch.setattr(retrieval, "CANDIDATE_LIMIT", 20)
    lookup = retrieval.lookup_for(
        project_id=PROJECT, subject_id="alice", query=query, now=now, cutoffs=volatility_cutoffs(now), config=config
    )
    qvec = get_embedder().embed_query(query, project_id=lookup.project_id)
    (found, episodes, whole), ran = _candidate_statements(lambda: retrieval.candidates_together(lookup, qvec=qvec))
    exact = retrieval._dense_exact(lookup, retrieval.FACTS), retrieval._dense_exact(lookup, retrieval.EVENTS)
    assert ran == ["whole", ("two-phase", *exact)] and not whole
    assert len(found) + len(episodes) == 20
    assert _ranked(found, episodes) == _ranked_apart(lookup, qvec)


def test_a_small_scopes_plain_call_scores_its_whole_scope_in_one_statement(api):
    """A plain call in a scope the statistics call small reads it whole: one statement, and the trace's decisions are
    those of every fact and episode of the scope."""
    now = timezone.now()
    _alices_orchard(now, n=10)
    packet, ran = _candidate_statements(lambda: ask(api, "apple trees by the river", budget=2000))
    assert ran == ["whole"]
    assert len(decisions(packet)) == 20


def test_the_episode_graph_scan_gets_the_hnsw_settings_when_the_fact_leg_sorts_exactly(api, monkeypatch):
    """A scope whose facts are sorted exactly (no hnsw) may still walk the event graph: a fresh connection
    must be tuned for that scan too (iterative scan, ef_search), or the scope filter leaves fewer than
    DENSE_TOP_K of the graph's first candidates."""
    from context import retrieval

    FactFactory(text="Marie met Julien in Lyon.")
    EventFactory(text="Marie met Julien.")
    stats = {
        retrieval.FACTS: retrieval.TableStats(),
        retrieval.EVENTS: retrieval.TableStats(rows=1e6, subject_freq={"alice": 1.0}),
        retrieval.PROCEDURES: retrieval.TableStats(),
    }
    monkeypatch.setattr(retrieval, "table_stats", lambda table=retrieval.FACTS, project_id=None: stats[table])
    assert stats[retrieval.FACTS].dense_exact(PROJECT, "alice") and not stats[retrieval.EVENTS].dense_exact(
        PROJECT, "alice"
    )
    with connection.cursor() as cursor:  # as a new connection is: defaults, not yet tuned
        cursor.execute("RESET hnsw.iterative_scan")
        cursor.execute("RESET hnsw.ef_search")
    retrieval._TUNED_CONNECTIONS.discard(connection.connection)
    packet = ask(api, "Who did Marie meet?")
    assert len(packet["episodes"]) == 1
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('hnsw.iterative_scan'), current_setting('hnsw.ef_search')")
        assert cursor.fetchone() == ("relaxed_order", str(retrieval.HNSW_EF_SEARCH))
