"""The store's services where no endpoint reaches them."""

import pytest
from django.utils import timezone

from privacy.services import project_erase
from facts.writes import _Batch, _Stored, _classify
from facts.writes import FactInput
from hakimem.embeddings import get_embedder
from facts.models import ConflictSet, Event, Fact, Procedure
from tests.conftest import PROJECT
from tests.facts.factories import ConflictSetFactory, EventFactory, FactFactory, IdentityBlockFactory, ProcedureFactory
from tests.traces.factories import record_call
from traces.models import Trace

pytestmark = pytest.mark.django_db


def test_erasing_a_project_takes_all_its_subjects_and_their_traces_and_nothing_else():
    # given a benchmark project with two subjects (a conflict set, a fact, an episode, two traces, one serving the
    # fact) and another project
    conflict_set = ConflictSetFactory(project_id="bench-x", subject_id="s1")
    served = FactFactory(project_id="bench-x", subject_id="s2")
    EventFactory(project_id="bench-x", subject_id="s2")
    record_call(
        at=timezone.now(),
        project_id="bench-x",
        subject_id="s1",
        facts=[(fact, "conflict_open") for fact in conflict_set.facts.all()],
    )
    record_call(at=timezone.now(), project_id="bench-x", subject_id="s2", facts=[(served, "included")])
    (
        IdentityBlockFactory(project_id="bench-x", subject_id=""),
        IdentityBlockFactory(project_id="bench-x", subject_id="s1"),
    )
    ProcedureFactory(project_id="bench-x", subject_id="")
    kept_procedure = ProcedureFactory(project_id=PROJECT, subject_id="")
    kept = FactFactory(project_id=PROJECT, subject_id="s1")
    record_call(at=timezone.now(), project_id=PROJECT, subject_id="s1", facts=[(kept, "included")])

    # when
    counts = project_erase(project_id="bench-x")

    # then
    assert counts == {
        "decisions": 3,
        "traces": 2,
        "item_accesses": 1,
        "conflict_members": 2,
        "conflict_sets": 1,
        "facts": 3,
        "extraction_jobs": 0,
        "write_jobs": 0,
        "events": 1,
        "admin_log_entries": 0,
        "consents": 0,
        "identity_blocks": 2,
        "procedures": 1,
        "scope_words": 0,
        "scope_word_counts": 0,
        "scope_writes": 2,
        "stats_subject_days": 0,
        "stats_fact_days": 0,
    }
    assert list(Fact.objects.values_list("id", flat=True)) == [kept.id]
    assert list(Procedure.objects.values_list("id", flat=True)) == [kept_procedure.id]
    assert not Event.objects.exists() and not ConflictSet.objects.exists()
    assert list(Trace.objects.values_list("project_id", flat=True)) == [PROJECT]


def test_classifying_a_batch_compares_each_item_with_the_earlier_new_facts_of_its_scope():
    # given a scope that holds nothing yet, and a batch: a fact, its near-duplicate, a contradiction of it, a
    # repeat of that contradiction's text, and the contradiction again in another subject
    nantes = "Paul lives in Nantes with his wife and their two children."
    bordeaux = nantes.replace("Nantes", "Bordeaux")
    items = [
        FactInput(project_id=PROJECT, subject_id=subject, text=text)
        for subject, text in (
            ("alice", nantes),
            ("alice", nantes.replace("Paul lives", "Paul now lives")),
            ("alice", bordeaux),
            ("alice", bordeaux.lower()),
            ("bob", bordeaux),
        )
    ]
    batch = _Batch.of(items, get_embedder().embed([item.text for item in items]))
    # when
    plan = _classify(batch, _Stored(by_hash={}, neighbours={}), now=timezone.now())
    # then three new facts; the near-duplicate and the repeat are answered by the earlier ones
    first, contradiction, other_subject = (new.fact for new in plan.new)
    assert [f.text for f in (first, contradiction, other_subject)] == [nantes, bordeaux, bordeaux]
    assert plan.duplicate_of == {1: first.id, 3: contradiction.id}
    assert [(fact_id, signal.rule) for fact_id, _, signal in plan.new[1].conflicts] == [(first.id, "different_value")]
    assert plan.new[0].conflicts == plan.new[2].conflicts == []
    assert plan.reconfirm == {}
