"""A large scope's own word counts (facts.scope_words: scope_words_count, scope_words_refresh): what is counted, what is
listed, what goes when a scope shrinks or is erased."""

import pytest
from django.db import connection
from django.utils import timezone

from facts import scope_words
from facts.scope_words import scope_words_count, scope_words_refresh
from facts.models import Fact, ScopeWord, ScopeWordCounts
from tests.conftest import OTHER_PROJECT, PROJECT, make_client, rows_mentioning
from tests.facts.factories import EventFactory, FactFactory

pytestmark = pytest.mark.django_db


def _words(subject: str, table: str = "facts_fact") -> dict[str, int]:
    return dict(
        ScopeWord.objects.filter(project_id=PROJECT, subject_id=subject, items_table=table).values_list("word", "items")
    )


def _fill(subject: str, facts: int, *, common: str = "loic") -> None:
    """`facts` facts; `common` in every one of them, "dentist" in every third, and one word of each fact its own."""
    for i in range(facts):
        FactFactory(
            subject_id=subject, text=f"{common.title()} wrote note{i}" + (" about the dentist." if i % 3 == 0 else ".")
        )


def test_a_scope_s_words_are_counted_per_table_and_only_the_common_ones_listed(monkeypatch):
    monkeypatch.setattr(scope_words, "SCOPE_WORDS_MIN_COUNT", 5)
    _fill("alice", 30)
    FactFactory(
        subject_id="alice",
        text="Loic moved away.",
        status="retracted",  # not active: not counted
        recorded_to=timezone.now(),
    )
    for i in range(6):
        EventFactory(subject_id="alice", text=f"Alice met Loic at the dentist, visit {i}.")

    assert scope_words_count(project_id=PROJECT, subject_id="alice") == 30
    assert scope_words_count(project_id=PROJECT, subject_id="alice", table="facts_event") == 6

    facts = _words("alice")
    assert facts["loic"] == 30 and facts["wrote"] == 30 and facts["dentist"] == 10
    assert "note7" not in facts and "moved" not in facts  # held by one fact; a retracted fact's word
    counts = ScopeWordCounts.objects.get(project_id=PROJECT, subject_id="alice", items_table="facts_fact")
    assert counts.items == 30 and counts.unlisted_max == 4  # a word not listed is in fewer than 5 facts
    events = _words("alice", "facts_event")
    assert events["dentist"] == 6 and events["met"] == 6 and "wrote" not in events
    # Every item holds its scope's lexeme (facts.models.ScopeLexeme): no word, never listed.
    assert not any(word.startswith("scope ") for word in (*facts, *events)), (facts, events)


def test_a_list_cut_at_its_length_says_how_common_an_unlisted_word_can_be(monkeypatch):
    monkeypatch.setattr(scope_words, "SCOPE_WORDS_MIN_COUNT", 1)
    monkeypatch.setattr(scope_words, "SCOPE_WORDS_MAX", 3)
    _fill("alice", 12)  # loic 12, wrote 12, about/the/dentist 4 each, note<i> 1 each
    scope_words_count(project_id=PROJECT, subject_id="alice")
    assert set(_words("alice")) == {"loic", "wrote", "about"}  # the commonest, ties by word
    assert ScopeWordCounts.objects.get(project_id=PROJECT, subject_id="alice").unlisted_max == 4


def test_refresh_counts_large_scopes_again_and_forgets_those_grown_small(monkeypatch):
    monkeypatch.setattr(scope_words, "SCOPE_WORDS_MIN_COUNT", 2)
    _fill("alice", 8)
    _fill("bob", 3, common="anna")
    assert scope_words_refresh(min_items=5) == 1
    assert _words("alice")["loic"] == 8 and _words("bob") == {}

    # alice's scope grows: its counts follow; then it shrinks under the threshold: its counts go
    _fill("alice", 4, common="maya")
    assert scope_words_refresh(min_items=5) == 1
    assert _words("alice")["loic"] == 8 and _words("alice")["maya"] == 4
    Fact.objects.filter(subject_id="alice").exclude(text__startswith="Maya").update(
        status="retracted", recorded_to=timezone.now()
    )
    assert scope_words_refresh(min_items=5) == 0
    assert not ScopeWordCounts.objects.exists() and not ScopeWord.objects.exists()
    assert scope_words_refresh(min_items=0) == 0  # 0: never


@pytest.mark.django_db(transaction=True)
def test_erasure_deletes_the_scope_s_words_and_its_receipt_says_so(monkeypatch):
    monkeypatch.setattr(scope_words, "SCOPE_WORDS_MIN_COUNT", 2)
    api = make_client(PROJECT)
    response = api.post(
        "/v1/facts",
        {
            "facts": [
                {"project_id": PROJECT, "subject_id": subject, "text": f"Zephyrine of {subject} keeps bees number {i}."}
                for subject in ("zoe", "bob")
                for i in range(4)
            ]
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    assert scope_words_refresh(min_items=2) == 2
    assert rows_mentioning("zephyrine")["facts_scopeword"] == 2  # the lexeme, in each scope

    response = api.delete(f"/v1/subjects/zoe?project_id={PROJECT}")

    assert response.status_code == 200
    assert response.json()["deleted"]["scope_words"] > 3 and response.json()["deleted"]["scope_word_counts"] == 1
    assert rows_mentioning("zoe") == {}
    assert not ScopeWord.objects.filter(subject_id="zoe").exists()
    assert _words("bob")["zephyrine"] == 4  # the other scope keeps its counts


def test_the_api_role_reads_only_its_own_project_s_counts(monkeypatch):
    from hakimem.rowsecurity import api_transaction

    monkeypatch.setattr(scope_words, "SCOPE_WORDS_MIN_COUNT", 1)
    for project in (PROJECT, OTHER_PROJECT):
        FactFactory(project_id=project, subject_id="alice", text="Loic wrote.")
        scope_words_count(project_id=project, subject_id="alice")
    with api_transaction(PROJECT):
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT DISTINCT project_id FROM facts_scopeword UNION SELECT project_id FROM facts_scopewordcounts"
            )
            assert cursor.fetchall() == [(PROJECT,)]


def test_revoking_a_category_with_erase_counts_the_scope_s_words_again(monkeypatch):
    # given a counted scope whose health facts alone hold some words
    monkeypatch.setattr(scope_words, "SCOPE_WORDS_MIN_COUNT", 2)
    for i in range(4):
        FactFactory(
            subject_id="alice", category="health", text=f"Alice injects insulin and avoids penicillin, dose {i}."
        )
    for i in range(6):
        FactFactory(subject_id="alice", category="hobby", text=f"Alice plays chess with Loic, game {i}.")
    scope_words_count(project_id=PROJECT, subject_id="alice")
    assert _words("alice")["insulin"] == 4 and _words("alice")["alice"] == 10

    # when the subject's consent to health is revoked with erase
    response = make_client(PROJECT).delete(f"/v1/subjects/alice/consents/health?project_id={PROJECT}&erase=true")

    # then the erased facts' words are gone from the counts, the others counted from the facts left
    assert response.status_code == 200 and response.json()["erased"]["facts"] == 4
    words = _words("alice")
    assert not {"insulin", "penicillin", "avoid", "inject"} & set(words), words
    assert words["alice"] == 6 and words["chess"] == 6
    assert ScopeWordCounts.objects.get(project_id=PROJECT, subject_id="alice", items_table="facts_fact").items == 6
    assert rows_mentioning("insulin") == {}
