"""The lexical leg: which of the question's words it fetches, how many matches it reads, and how phase two keeps
the best by the assembler's own score."""

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from context.retrieval import lexical_terms, or_query
from tests.conftest import PROJECT
from tests.facts.factories import FactFactory

pytestmark = pytest.mark.django_db


def _candidates(query, subject="alice"):
    from context import retrieval
    from facts.selectors import volatility_cutoffs
    from hakimem.embeddings import get_embedder

    now = timezone.now()
    lookup = retrieval.lookup_for(
        project_id=PROJECT, subject_id=subject, query=query, now=now, cutoffs=volatility_cutoffs(now)
    )
    return retrieval.fact_candidates(lookup, qvec=get_embedder().embed_query(query, project_id=lookup.project_id))


def test_the_lexical_leg_keeps_the_matches_nearest_to_the_question(monkeypatch):
    """The leg fetches "buy" alone, which every fact below holds once, so ts_rank_cd ranks them alike; the leg must
    keep the match that answers, not the newest ones."""
    from dataclasses import replace

    from context import retrieval
    from facts.selectors import volatility_cutoffs
    from hakimem.embeddings import get_embedder

    monkeypatch.setattr(retrieval, "DENSE_TOP_K", 1)
    monkeypatch.setattr(retrieval, "LEXICAL_TOP_K", 1)
    long_ago = timezone.now() - timedelta(days=400)
    answers = {
        FactFactory(text=f"Alice is saving to buy a flat in Kyoto by {year}.", recorded_from=long_ago).id
        for year in (2027, 2028)
    }
    for thing in ("milk", "stamps", "a bus ticket", "new socks"):
        FactFactory(text=f"Remember to buy {thing} today.")
    question, now = "What is Alice saving to buy in Kyoto?", timezone.now()
    lookup = replace(
        retrieval.lookup_for(
            project_id=PROJECT, subject_id="alice", query=question, now=now, cutoffs=volatility_cutoffs(now)
        ),
        fact_text=retrieval.TextQuery("buy", "buy", ("buy",), (1.0,), (True,)),
    )
    candidates = retrieval.fact_candidates(
        lookup, qvec=get_embedder().embed_query(question, project_id=lookup.project_id)
    )
    assert {c.id for c in candidates} == answers


@pytest.mark.parametrize("max_rows, fetched", [(3, 3), (100, 7)])
def test_the_lexical_leg_reads_at_most_its_row_cap_of_matches(monkeypatch, max_rows, fetched):
    """A word can be far more common in a scope than in the table its statistics describe (a scope's own
    protagonist); the leg then reads LEXICAL_LEG_MAX_ROWS of its matches, not all of them."""
    from context import retrieval

    monkeypatch.setattr(retrieval, "DENSE_TOP_K", 1)
    monkeypatch.setattr(retrieval, "LEXICAL_TOP_K", 10)
    monkeypatch.setattr(retrieval, "LEXICAL_LEG_MAX_ROWS", max_rows)
    for i in range(8):
        FactFactory(text=f"Loïc keeps notebook number {i}.")
    assert len(_candidates("Loïc's notebook")) == 1 + fetched
    # and so does the degraded path's only leg (no query vector)
    from facts.selectors import volatility_cutoffs

    now = timezone.now()
    lookup = retrieval.lookup_for(
        project_id=PROJECT, subject_id="alice", query="Loïc's notebook", now=now, cutoffs=volatility_cutoffs(now)
    )
    assert len(retrieval.fact_candidates(lookup, qvec=None)) == min(max_rows, 8)


@pytest.mark.parametrize("dense_exact", [True, False])
def test_phase_two_keeps_the_best_candidates_by_the_assemblers_own_score(monkeypatch, dense_exact):
    """The SQL cut to CANDIDATE_LIMIT ranks with the same formula as context.scoring.hybrid_score."""
    from context import retrieval
    from context.scoring import hybrid_score

    monkeypatch.setattr(retrieval.TableStats, "dense_exact", lambda self, project, subject, **scope: dense_exact)
    now = timezone.now()
    for i in range(30):
        FactFactory(
            text=f"Alice's garden has {i} tomato plants and a pear tree number {i % 7}.",
            recorded_from=now - timezone.timedelta(days=3 * i),
        )
    query = "how many tomato plants in the garden"
    everything = _candidates(query)
    assert len(everything) == 30
    by_python = sorted(
        everything, key=lambda c: (-hybrid_score(c.similarity, c.text_rank, c.recency), -c.recency, str(c.id))
    )
    monkeypatch.setattr(retrieval, "CANDIDATE_LIMIT", 5)
    best = _candidates(query)
    assert [c.id for c in best] == [c.id for c in by_python[:5]]
    assert all(c.similarity == pytest.approx(1 - c.distance) for c in best)


def test_lexical_leg_ors_meaningful_words_where_websearch_alone_ands_them():
    FactFactory(text="Alice's dentist is Dr Okafor on Rue Verte.")
    question = "who is the dentist she sees on Thursdays"
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM facts_fact WHERE search_vector @@ websearch_to_tsquery('simple', %s)", [question]
        )
        assert cursor.fetchone()[0] == 0  # the whole question as the specification queries it: every word must match
        cursor.execute(
            "SELECT count(*) FROM facts_fact WHERE search_vector @@ websearch_to_tsquery('simple', %s)",
            [or_query(lexical_terms(question))],
        )
        assert cursor.fetchone()[0] == 1
    assert lexical_terms(question) == ["dentist", "sees", "thursdays"]


def _texts(text_query):
    return text_query.tsq, text_query.leg_tsq


def test_words_too_common_to_rank_leave_the_or(monkeypatch):
    from context import retrieval

    stats = retrieval.TableStats(
        rows=1000, term_freq={"lives": 0.30, "works": 0.25, "okafor": 0.0001}, subject_freq={"alice": 0.1}
    )
    monkeypatch.setattr(retrieval, "table_stats", lambda table=retrieval.FACTS, project_id=None: stats)
    queries = retrieval.text_queries("Where does Okafor live and where does he work? lives works", "alice")
    assert _texts(queries) == ("okafor or live or work", "okafor or live or work")
    # every word common: all of them together, a selective AND
    assert _texts(retrieval.text_queries("lives works", "alice")) == ("lives works", "lives works")
    assert _texts(retrieval.text_queries("the and of", "alice")) == ("", "")


def test_the_lexical_leg_keeps_the_rarest_words_within_its_row_budget(monkeypatch):
    from context import retrieval

    # a 100k-fact scope: "anders" is in 1.5% of facts (1,500 expected matches), "porto" in 0.4%, "visit" 0.5%
    stats = retrieval.TableStats(
        rows=200_000,
        term_freq={"anders": 0.015, "porto": 0.004, "visit": 0.005},
        subject_freq={"big": 0.5},
        other_subject_freq=0.0002,
    )
    monkeypatch.setattr(retrieval, "table_stats", lambda table=retrieval.FACTS, project_id=None: stats)
    monkeypatch.setattr(retrieval, "LEXICAL_LEG_MAX_MATCHES", 1000)
    # scoring keeps every informative word; the leg keeps porto (400) and visit (+500), not anders (+1,500)
    assert _texts(retrieval.text_queries("When did Anders visit Porto?", "big")) == (
        "anders or visit or porto",
        "visit or porto",
    )
    # one word over the budget on its own: no lexical leg, the word still scores
    assert _texts(retrieval.text_queries("Who is Anders?", "big")) == ("anders", "")
    # a small scope (40 expected facts) can afford every word
    assert _texts(retrieval.text_queries("Who is Anders?", "s-1")) == ("anders", "anders")
    # which words the leg fetches, per word of the score's query
    assert retrieval.text_queries("When did Anders visit Porto?", "big").kept == (False, True, True)
    assert retrieval.text_queries("Who is Anders?", "big").kept == (False,)
    assert retrieval.text_queries("Who is Anders?", "s-1").kept == (True,)


def test_a_word_too_common_to_fetch_ranks_only_the_rows_a_fetched_word_found(monkeypatch):
    """In a 100k-fact scope "job" (1.9% of facts) is left out of the lexical leg: it adds to the text rank of a row
    that holds "chiara", which the leg fetches, and gives none to a row that holds it alone (neither leg could reach
    such rows, so they must not outrank what the legs found). In a small scope the leg fetches both words and
    each counts on its own."""
    from context import retrieval

    stats = retrieval.TableStats(
        rows=200_000, term_freq={"job": 0.019}, subject_freq={"big": 0.5}, other_subject_freq=0.0002
    )
    monkeypatch.setattr(retrieval, "table_stats", lambda table=retrieval.FACTS, project_id=None: stats)
    texts = {
        "both": "Chiara's job is nursing.",
        "rare": "Chiara lives in Turin.",
        "common": "The job fair opens Monday.",
    }
    for subject in ("big", "s-1"):
        ids = {FactFactory(text=text, subject_id=subject).id: key for key, text in texts.items()}
        ranks = {ids[c.id]: c.text_rank for c in _candidates("What is Chiara's job?", subject)}
        text = retrieval.text_queries("What is Chiara's job?", subject)
        weights = dict(zip(text.terms, text.weights))
        assert 0.1 < weights["job"] < weights["chiara"]
        assert ranks["both"] == pytest.approx(1.0) and ranks["rare"] == pytest.approx(weights["chiara"])
        assert ranks["common"] == (0 if subject == "big" else pytest.approx(weights["job"]))


def test_table_statistics_come_from_the_planner():
    from context import retrieval

    for i in range(40):
        FactFactory(text=f"Alice likes item {i}.", subject_id="s0" if i < 30 else f"s{i}")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE facts_fact")
    retrieval.table_stats_refresh()
    stats = retrieval.table_stats()
    assert stats.rows == 40
    assert stats.term_freq["alice"] == pytest.approx(1.0) and stats.term_freq["likes"] == pytest.approx(1.0)
    assert stats.scope_rows("s0") == pytest.approx(30)
    assert stats.scope_rows("s35") == pytest.approx(1, rel=0.5)
    assert retrieval.text_queries("who likes okafor", "s0").tsq == "okafor"
