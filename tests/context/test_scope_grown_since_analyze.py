"""A scope written to since the last ANALYZE: the statistics still call it small, the whole-scope statement finds it
is not, and later calls under the same statistics go straight to the two phases (context/retrieval.py)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tests.conftest import PROJECT
from tests.facts.factories import EventFactory, FactFactory

pytestmark = pytest.mark.django_db


def _candidates(lookup, qvec):
    """candidates_together's facts and episodes (ids, in order) and its statements: "whole" or "two-phase"."""
    from context import retrieval

    with CaptureQueriesContext(connection) as queries:
        facts, episodes, _ = retrieval.candidates_together(lookup, qvec=qvec)
    ran = [
        "whole" if "AS scope_facts" in q["sql"] else "two-phase"
        for q in queries.captured_queries
        if "AS scope_facts" in q["sql"] or "f_dense AS" in q["sql"]
    ]
    return [f.id for f in facts] + [e.id for e in episodes], ran


def test_a_scope_found_larger_than_the_statistics_say_skips_the_whole_scope_statement_until_they_change():
    from context import retrieval
    from context.config import default_config
    from facts.selectors import volatility_cutoffs
    from hakimem.embeddings import get_embedder

    now = timezone.now()
    for i in range(30):
        FactFactory(text=f"Alice's orchard has {i} apple trees near the river {i % 5}.")
        EventFactory(text=f"Alice planted {i} apple trees in the orchard by the river.")
    config = default_config().with_overrides({"dense_top_k": 12})  # the scope holds more rows than that
    query = "apple trees by the river orchard"

    def lookup():
        return retrieval.lookup_for(
            project_id=PROJECT, subject_id="alice", query=query, now=now, cutoffs=volatility_cutoffs(now), config=config
        )

    first = lookup()
    qvec = get_embedder().embed_query(query, project_id=PROJECT)
    assert retrieval.whole_scope_expected(first, 12)  # the tables were never analysed: a new table is small
    found, ran = _candidates(first, qvec)
    assert ran == ["whole", "two-phase"]

    again, ran_again = _candidates(lookup(), qvec)
    assert ran_again == ["two-phase"] and again == found
    assert retrieval.whole_scope_expected(lookup(), 24)  # a call asking for more rows is not decided by it

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE facts_fact")  # new statistics: what was found under the old ones is forgotten
    lookup()
    assert retrieval._table_stats[PROJECT].beyond_whole_scope == set()
