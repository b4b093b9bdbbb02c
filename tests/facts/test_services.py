"""The store's services where no endpoint reaches them."""
import pytest
from django.utils import timezone

from facts import services
from facts.models import ConflictSet, Event, Fact
from tests.conftest import PROJECT
from tests.facts.factories import ConflictSetFactory, EventFactory, FactFactory
from tests.traces.factories import record_call
from traces.models import Trace

pytestmark = pytest.mark.django_db


def test_erasing_a_project_takes_all_its_subjects_and_their_traces_and_nothing_else():
    # given a benchmark project with two subjects (a conflict set, a fact, an episode, a trace) and another project
    conflict_set = ConflictSetFactory(project_id="bench-x", subject_id="s1")
    FactFactory(project_id="bench-x", subject_id="s2")
    EventFactory(project_id="bench-x", subject_id="s2")
    record_call(at=timezone.now(), project_id="bench-x", subject_id="s1",
                facts=[(fact, "conflict_open") for fact in conflict_set.facts.all()])
    kept = FactFactory(project_id=PROJECT, subject_id="s1")
    record_call(at=timezone.now(), project_id=PROJECT, subject_id="s1", facts=[(kept, "included")])

    # when
    counts = services.project_erase(project_id="bench-x")

    # then
    assert counts == {"decisions": 2, "traces": 1, "conflict_members": 2, "conflict_sets": 1, "facts": 3, "events": 1}
    assert list(Fact.objects.values_list("id", flat=True)) == [kept.id]
    assert not Event.objects.exists() and not ConflictSet.objects.exists()
    assert list(Trace.objects.values_list("project_id", flat=True)) == [PROJECT]
