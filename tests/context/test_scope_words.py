"""The context call reads a large scope's own word counts (context.retrieval.scope_words_read): the lexical leg picks
its words by their count in the scope, multi-hop walks the scope for a name common in it; a small scope's call never
reads them."""

import pytest
from django.conf import settings
from django.db import connection
from django.utils import timezone

from context import multi_hop, retrieval
from facts import scope_words
from facts.scope_words import scope_words_refresh
from facts.selectors import volatility_cutoffs
from tests.conftest import PROJECT
from tests.facts.factories import FactFactory

pytestmark = pytest.mark.django_db


def test_the_lexical_leg_judges_a_word_by_its_count_in_the_scope_when_it_has_one(monkeypatch):
    # a 10k scope of a 1M table: "loic" is in 0.47 % of the table (47 expected in the scope) and in 4,655 of its facts
    stats = retrieval.TableStats(
        rows=1_000_000,
        term_freq={"loic": 0.0047, "dentist": 0.001},
        subject_freq={"mid": 0.01},
        other_subject_freq=0.00005,
    )
    monkeypatch.setattr(retrieval, "table_stats", lambda table=retrieval.FACTS, project_id=None: stats)
    question = "Loic and the dentist?"
    assert retrieval.text_queries(question, "mid").kept == (True, True)  # by the table's shares: 47 + 10 matches

    counted = retrieval.ScopeWords(items=10_000, counts={"loic": 4_655}, unlisted_max=9)
    text = retrieval.text_queries(question, "mid", counted=counted)
    assert text.terms == ("loic", "dentist") and text.kept == (False, True) and text.leg_tsq == "dentist"
    # the weights stay the words' information in the table
    assert text.weights == retrieval.text_queries(question, "mid").weights
    # a word not listed is held by at most unlisted_max facts, and never by more than the table's share says
    assert counted.holding("dentist", 10.0) == 9 and counted.holding("dentist", 2.0) == 2.0


def _lookup(subject: str, query: str) -> retrieval.Lookup:
    now = timezone.now()
    return retrieval.lookup_for(
        project_id=PROJECT, subject_id=subject, query=query, now=now, cutoffs=volatility_cutoffs(now)
    )


def test_a_call_reads_the_counts_of_a_large_scope_only(monkeypatch, django_assert_num_queries):
    monkeypatch.setattr(settings, "HAKI_SCOPE_WORDS_MIN_ITEMS", 20)
    monkeypatch.setattr(scope_words, "SCOPE_WORDS_MIN_COUNT", 2)
    for i in range(24):
        FactFactory(subject_id="alice", text=f"Loic wrote note{i}" + (" with Maya." if i % 4 == 0 else "."))
    for i in range(3):
        FactFactory(subject_id="bob", text=f"Bob wrote note{i}.")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE facts_fact")
    scope_words_refresh(min_items=20)
    retrieval.table_stats(project_id=PROJECT)

    with django_assert_num_queries(2):  # the statistics' version, the counts
        lookup = _lookup("alice", "What did Loic and Zed write?")
    assert lookup.scope_words == {retrieval.FACTS: retrieval.ScopeWords(items=24, counts={"loic": 24}, unlisted_max=1)}
    with django_assert_num_queries(1):  # bob's 3 facts: the statistics' version, no count
        assert _lookup("bob", "What did Loic write?").scope_words == {}

    # multi-hop reads the counts of names the query did not hold, once, and walks for a common one
    with django_assert_num_queries(1):
        assert multi_hop._walked(lookup, ["Maya", "Loic"]) == {1}
    # 24 ** 2 > 5 x 24; maya (6 facts) is fetched from the index: 6 ** 2 < 5 x 24
    assert multi_hop._walked(lookup, ["Loic"]) == {0}


def test_the_trace_keeps_the_counts_that_chose_the_legs_words(api, monkeypatch):
    from traces.models import Trace

    monkeypatch.setattr(settings, "HAKI_SCOPE_WORDS_MIN_ITEMS", 20)
    monkeypatch.setattr(scope_words, "SCOPE_WORDS_MIN_COUNT", 2)
    for i in range(24):
        FactFactory(subject_id="alice", text=f"Loic wrote note{i}.")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE facts_fact")
    scope_words_refresh(min_items=20)

    response = api.post(
        "/v1/context", {"project_id": PROJECT, "subject_id": "alice", "query": "What did Loic write?"}, format="json"
    )

    assert response.status_code == 200, response.content
    inputs = Trace.objects.get(id=response.json()["trace_id"]).inputs
    assert inputs["scope_words"] == {retrieval.FACTS: {"items": 24, "counts": {"loic": 24}, "unlisted_max": 1}}
