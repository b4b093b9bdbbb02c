"""manage.py consolidate (context/consolidation.py): what query time decided for one call, applied to the store;
near-duplicates merged; decayed access counts deleted. Each action once: a second run changes nothing."""

from datetime import timedelta
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command
from django.utils import timezone

from context.consolidation import consolidate
from context.models import ConsolidationMark
from facts.models import ConflictSet, ConflictStatus, Fact, FactStatus, Project
from facts.conflicts import conflict_resolve
from tests.conftest import PROJECT
from tests.facts.factories import ConflictSetFactory, FactFactory
from tests.traces.factories import record_call
from traces.models import ACCESS_TAU_DAYS, ItemAccess
from traces.services import DecisionRow, trace_record

pytestmark = pytest.mark.django_db

# One direction per test for all its facts (consolidation compares them by rules, not by how alike they are),
# drawn anew: many copies of one vector left in the hnsw graph by rolled-back tests would starve later probes.
BASE = np.zeros(384, dtype=np.float32)


@pytest.fixture(autouse=True)
def fresh_base():
    v = np.random.default_rng().standard_normal(384)
    BASE[:] = v / np.linalg.norm(v)


def fact(text: str, days_ago: float = 0, subject_id="alice", **fields) -> Fact:
    at = timezone.now() - timedelta(days=days_ago)
    return FactFactory(
        text=text, embedding=BASE.copy(), recorded_from=at, last_confirmed_at=at, subject_id=subject_id, **fields
    )


def call_superseding(winner: Fact, loser: Fact, *, at=None, replay_of=None):
    """A context call that served `winner` and left `loser` out as superseded_in_context."""
    rows = [
        DecisionRow(
            item_type="fact",
            item_id=winner.id,
            reason_code="included",
            rank=1,
            score=0.9,
            similarity=0.9,
            cosine_distance=0.1,
            text_rank=0.0,
            recency=1.0,
            tokens=6,
        ),
        DecisionRow(
            item_type="fact",
            item_id=loser.id,
            reason_code="superseded_in_context",
            rank=2,
            score=0.8,
            similarity=0.9,
            cosine_distance=0.1,
            text_rank=0.0,
            recency=0.9,
            tokens=6,
            by_item=winner.id,
        ),
    ]
    trace_record(
        trace={
            "project_id": winner.project_id,
            "subject_id": winner.subject_id,
            "query": "where does Paul live?",
            "budget_tokens": 900,
            "used_tokens": 6,
            "status": "ok",
            "empty_reason": None,
            "warnings": [],
            "rendered": "",
            "facts_served": 1,
            "episodes_served": 0,
            "candidates": 2,
            "embedder": "hashing",
            "timings": {},
            "latency_ms": 5.0,
            "created_at": at or timezone.now(),
            "replay_of": replay_of,
        },
        decisions=rows,
    )


def statuses() -> dict:
    return dict(Fact.objects.values_list("text", "status"))


def state() -> tuple:
    """Everything consolidation may change."""
    return (
        sorted(Fact.objects.values_list("id", "status", "superseded_by_id", "last_confirmed_at")),
        sorted(ConflictSet.objects.values_list("id", "status")),
        sorted(ItemAccess.objects.values_list("item_id", "count")),
    )


def test_under_newest_wins_the_loser_of_a_call_is_superseded_once():
    Project.objects.create(project_id=PROJECT, conflict_policy="newest_wins")
    nantes, bordeaux = fact("Paul lives in Nantes.", 3), fact("Paul lives in Bordeaux.", 1)
    call_superseding(bordeaux, nantes)
    call_superseding(bordeaux, nantes)  # a second call deciding the same

    report = consolidate()

    nantes.refresh_from_db()
    assert nantes.status == FactStatus.SUPERSEDED and nantes.superseded_by_id == bordeaux.id
    assert list(ConflictSet.objects.values_list("status", "resolved_by", "signal")) == [
        (ConflictStatus.RESOLVED, "system:newest_wins", "different_value")
    ]
    assert (report.contradictions_superseded, report.contradictions_proposed, report.changes()) == (1, 0, 1)
    # and a second run, even over the whole history, changes nothing
    before = state()
    assert consolidate(since=timezone.now() - timedelta(days=30)).changes() == 0 and state() == before


def test_under_curator_the_pair_is_proposed_once_and_a_dismissal_sticks():
    nantes, bordeaux = fact("Paul lives in Nantes.", 3), fact("Paul lives in Bordeaux.", 1)
    call_superseding(bordeaux, nantes)

    report = consolidate()

    [opened] = ConflictSet.objects.all()
    assert opened.status == ConflictStatus.OPEN and set(opened.members.values_list("fact_id", flat=True)) == {
        nantes.id,
        bordeaux.id,
    }
    assert statuses() == {nantes.text: FactStatus.ACTIVE, bordeaux.text: FactStatus.ACTIVE}
    assert (report.contradictions_proposed, report.changes()) == (1, 1)
    assert consolidate(since=timezone.now() - timedelta(days=1)).changes() == 0
    # when a curator dismisses it and calls keep deciding the same, consolidation proposes nothing again
    conflict_resolve(conflict_set=opened, actor="cora", dismiss=True)
    call_superseding(bordeaux, nantes)
    again = consolidate(since=timezone.now() - timedelta(days=1))
    assert (again.changes(), again.contradictions_skipped) == (0, 1)
    assert list(ConflictSet.objects.values_list("status", flat=True)) == [ConflictStatus.DISMISSED]


def test_pairs_that_no_longer_hold_and_replays_are_left_alone():
    Project.objects.create(project_id=PROJECT, conflict_policy="newest_wins")
    # given a pair whose texts do not contradict by the rules (the loser's text was edited in place since)
    tea, green = fact("Paul likes tea.", 3), fact("Paul likes green tea.", 1)
    call_superseding(green, tea)
    # and a replay's decision about a real contradiction
    nantes, bordeaux = fact("Paul lives in Nantes.", 3), fact("Paul lives in Bordeaux.", 1)
    call_superseding(bordeaux, nantes, replay_of="00000000-0000-0000-0000-000000000001")

    report = consolidate()

    assert set(statuses().values()) == {FactStatus.ACTIVE} and not ConflictSet.objects.exists()
    assert (report.changes(), report.contradictions_skipped) == (0, 1)


def test_the_window_starts_at_the_last_run_unless_since_says_otherwise():
    Project.objects.create(project_id=PROJECT, conflict_policy="newest_wins")
    nantes, bordeaux = fact("Paul lives in Nantes.", 3), fact("Paul lives in Bordeaux.", 1)
    consolidate()
    mark = ConsolidationMark.objects.get(project_id=PROJECT).consolidated_at
    # given a call dated well before the last run (committed late, or a clock that lagged)
    call_superseding(bordeaux, nantes, at=mark - timedelta(hours=2))
    # then the next run does not read it, and a run told --since does
    assert consolidate().changes() == 0
    assert consolidate(since=mark - timedelta(days=1)).contradictions_superseded == 1


def test_a_newer_fact_that_adds_nothing_is_merged_into_the_older_which_it_reconfirms():
    # given near-duplicates (same vector here) of which the newer adds nothing, one that adds a word, and a pair
    # in an open conflict set
    older = fact("Paul lives in Nantes.", 10)
    newer = fact("Paul now lives in Nantes.", 2)
    adds = fact("Paul lives in Nantes with Marie.", 1)
    tea, tea_again = fact("Paul likes tea.", 5, subject_id="bob"), fact("Paul now likes tea.", 4, subject_id="bob")
    ConflictSetFactory(subject_id="bob", members=[tea, fact("Paul hates tea.", 6, subject_id="bob")])

    report = consolidate()

    # then the newer repeat is answered by the older, as at write time, and the one adding a word stays
    newer.refresh_from_db()
    older.refresh_from_db()
    assert (newer.status, newer.superseded_by_id) == (FactStatus.SUPERSEDED, older.id)
    assert older.status == FactStatus.ACTIVE and older.last_confirmed_at == newer.last_confirmed_at
    assert Fact.objects.get(id=adds.id).status == FactStatus.ACTIVE
    assert Fact.objects.get(id=tea_again.id).status == FactStatus.ACTIVE  # its twin awaits a curator
    assert report.duplicates_merged == 1
    before = state()
    assert consolidate(since=timezone.now() - timedelta(days=30)).changes() == 0 and state() == before


def test_access_counts_decayed_below_the_floor_are_deleted():
    now = timezone.now()
    fresh, old = fact("Paul lives in Nantes.", 1), fact("Paul likes tea.", 200)
    record_call(at=now, facts=[(fresh, "included")])
    record_call(at=now - timedelta(days=4 * ACCESS_TAU_DAYS), facts=[(old, "included")])  # exp(-4) < 0.05

    report = consolidate()

    assert list(ItemAccess.objects.values_list("item_id", flat=True)) == [fresh.id]
    assert (report.item_accesses_deleted, report.item_accesses_kept) == (1, 1)
    assert consolidate().item_accesses_deleted == 0


def test_a_dry_run_reports_everything_and_writes_nothing():
    # given one thing to do of each kind, in a newest_wins project
    Project.objects.create(project_id=PROJECT, conflict_policy="newest_wins")
    nantes, bordeaux = fact("Paul lives in Nantes.", 3), fact("Paul lives in Bordeaux.", 1)
    call_superseding(bordeaux, nantes)
    fact("Paul now lives in Bordeaux.", 0.5)
    record_call(at=timezone.now() - timedelta(days=4 * ACCESS_TAU_DAYS), facts=[(nantes, "included")])
    before = state()

    out = StringIO()
    call_command("consolidate", "--dry-run", "--project", PROJECT, stdout=out)

    assert state() == before and not ConsolidationMark.objects.exists()
    assert out.getvalue().startswith(
        "would change: 1 fact(s) superseded by a newer contradicting fact, "
        "0 contradiction(s) proposed to curators, 1 near-duplicate(s) merged, "
        "1 decayed access count(s) deleted, 0 scope(s) given their own hnsw graph, "
        "0 their own full-text index, 0 scope(s)' words counted\n"
    )
    # and the same run for real does what it said
    report = consolidate(project_id=PROJECT)
    assert (report.contradictions_superseded, report.duplicates_merged, report.item_accesses_deleted) == (1, 1, 1)


def test_project_limits_the_run_to_one_project():
    Project.objects.create(project_id="other", conflict_policy="newest_wins")
    nantes = fact("Paul lives in Nantes.", 3, project_id="other")
    bordeaux = fact("Paul lives in Bordeaux.", 1, project_id="other")
    call_superseding(bordeaux, nantes)
    assert consolidate(project_id=PROJECT).changes() == 0
    assert Fact.objects.get(id=nantes.id).status == FactStatus.ACTIVE
    assert consolidate(project_id="other").contradictions_superseded == 1


def test_since_must_be_a_date_or_a_moment_with_an_offset():
    from django.core.management import CommandError

    with pytest.raises(CommandError, match="--since"):
        call_command("consolidate", "--since", "yesterday")


def test_the_periodic_job_is_registered_on_its_queue():
    from procrastinate.contrib.django import app

    from context import tasks

    periodic = [p for p in app.periodic_registry.periodic_tasks.values() if p.task.name == "context.consolidate"]
    assert [(p.cron, p.task.queue) for p in periodic] == [("17 3 * * *", tasks.QUEUE)]
