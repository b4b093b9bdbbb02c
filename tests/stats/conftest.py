"""A known week of context calls, shared by the API and the page tests: the pages must show what the API says."""

from datetime import UTC, datetime

import pytest

from facts.models import ConflictMember, ConflictSet
from tests.conftest import OTHER_PROJECT, PROJECT
from tests.facts.factories import EventFactory, FactFactory
from tests.traces.factories import record_call

SINCE, UNTIL = "2026-03-01T00:00:00Z", "2026-03-08T00:00:00Z"
RECORDED = datetime(2026, 2, 1, tzinfo=UTC)


def at(day, hour=12):
    return datetime(2026, 3, day, hour, tzinfo=UTC)


def fact(text, subject="alice", **extra):
    return FactFactory(text=text, subject_id=subject, **{"recorded_from": RECORDED, **extra})


def open_conflict(project, subject, facts, opened_at, status="open"):
    conflict_set = ConflictSet.objects.create(
        project_id=project,
        subject_id=subject,
        status=status,
        signal="negation",
        similarity=0.9,
        opened_at=opened_at,
        resolved_at=None if status == "open" else opened_at,
    )
    for f in facts:
        ConflictMember.objects.create(project_id=project, conflict_set=conflict_set, fact=f, added_at=opened_at)
    return conflict_set


@pytest.fixture
def week(api):
    """Four context calls of PROJECT in the week [1 Mar, 8 Mar), and calls just outside it or elsewhere."""
    peanuts, cats, tea = fact("Alice is allergic to peanuts."), fact("Alice has two cats."), fact("Alice drinks tea.")
    bob, paris, lyon = (
        fact("Bob plays chess.", "bob"),
        fact("Bob lives in Paris.", "bob"),
        fact("Bob lives in Lyon.", "bob"),
    )
    old = fact("Alice once lived in Oslo.")  # served only before the week
    fact("Alice liked jazz.", status="retracted", recorded_to=RECORDED)  # not active: not counted
    fact("Alice started pottery.", recorded_from=datetime(2026, 3, 20, tzinfo=UTC))  # recorded after the week
    gym = EventFactory(text="Bob went to the gym.", subject_id="bob")

    record_call(
        at=at(1, 10),
        latency_ms=10,
        used_tokens=100,
        facts=[(peanuts, "included"), (cats, "included"), (tea, "over_budget")],
    )
    record_call(
        at=at(2, 9),
        latency_ms=20,
        used_tokens=0,
        empty_reason="no_relevant_memory",
        facts=[(peanuts, "below_relevance_floor"), (cats, "below_relevance_floor")],
    )
    record_call(
        at=at(2, 15),
        subject_id="bob",
        latency_ms=30,
        used_tokens=50,
        facts=[(bob, "included"), (paris, "conflict_open")],
    )
    record_call(
        at=at(3),
        subject_id="bob",
        latency_ms=40,
        used_tokens=40,  # an episode but no fact
        facts=[(lyon, "conflict_open")],
        episodes=[(gym, "included")],
    )

    record_call(at=datetime(2026, 2, 28, 23, 59, 59, tzinfo=UTC), facts=[(old, "included")])  # before since
    record_call(at=at(8, 0), facts=[(tea, "included")])  # at until: the period excludes its end
    elsewhere = FactFactory(project_id=OTHER_PROJECT, text="Carol sails.", subject_id="carol", recorded_from=RECORDED)
    record_call(at=at(2), project_id=OTHER_PROJECT, subject_id="carol", latency_ms=999, facts=[(elsewhere, "included")])

    open_conflict(PROJECT, "bob", [paris, lyon], datetime(2026, 2, 15, tzinfo=UTC))
    open_conflict(PROJECT, "alice", [peanuts, cats], datetime(2026, 1, 1, tzinfo=UTC), status="resolved")
    open_conflict(OTHER_PROJECT, "carol", [elsewhere], datetime(2025, 1, 1, tzinfo=UTC))
