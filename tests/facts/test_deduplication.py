"""A fact already stored (the same normalised text, or nearly) is reconfirmed, not stored twice, within a batch
and under concurrent writes; a fact whose vector cannot rank is compared by its text only."""

import threading

import pytest
from django.db import connection, connections

from facts.writes import fact_create
from facts.models import ConflictSet, Fact
from tests.conftest import PROJECT
from tests.facts.calls import PAUL_IN_NANTES, fact, post_fact

pytestmark = pytest.mark.django_db


def test_same_normalised_text_is_deduplicated_and_reconfirmed(api):
    first = post_fact(api, "Alice plays the cello.")
    second = post_fact(api, "  alice PLAYS the   cello!! ")
    assert second["deduplicated"] is True and second["id"] == first["id"]
    assert second["last_confirmed_at"] > first["last_confirmed_at"]
    assert Fact.objects.count() == 1


def test_duplicates_inside_one_batch(api):
    response = api.post(
        "/v1/facts", {"facts": [fact("Alice plays the cello."), fact("alice plays the cello")]}, format="json"
    )
    first, second = response.json()["facts"]
    assert second["id"] == first["id"] and second["deduplicated"] is True and first["deduplicated"] is False
    assert Fact.objects.count() == 1


def test_near_duplicate_is_not_stored_twice(api):
    first = post_fact(api, PAUL_IN_NANTES)
    again = post_fact(api, PAUL_IN_NANTES.replace("Paul lives", "Paul now lives"))
    assert again["deduplicated"] is True and again["id"] == first["id"]


def test_same_text_in_another_subject_is_another_fact(api):
    assert post_fact(api, "Likes tea.")["id"] != post_fact(api, "Likes tea.", subject_id="bob")["id"]


@pytest.mark.django_db(transaction=True)
def test_concurrent_identical_writes_make_one_row():
    barrier = threading.Barrier(2)
    results, errors = [], []

    def write():
        try:
            barrier.wait()
            results.append(fact_create(actor="test", project_id=PROJECT, subject_id="alice", text="Alice keeps bees."))
        except Exception as exc:  # surfaced by the assertion below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=write) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert Fact.objects.filter(text="Alice keeps bees.").count() == 1
    assert sorted(r.deduplicated for r in results) == [False, True]
    assert len({r.fact.id for r in results}) == 1
    connections.close_all()


def test_facts_whose_vector_cosine_cannot_rank_are_compared_by_text_only(api, caplog):
    # the hashing embedder gives punctuation and emoji no token: an all-zero vector, whose cosine distance to
    # anything is NaN
    first = post_fact(api, "!!! ???")
    second = post_fact(api, "🙂🙂")
    repeat = post_fact(api, "!!! ???")
    assert first["id"] != second["id"] and not second["deduplicated"] and second["conflict_set_id"] is None
    assert repeat["deduplicated"] and repeat["id"] == first["id"]
    assert not ConflictSet.objects.exists()
    assert "degenerate vector" in caplog.text
