"""Pairs found contradictory at query time, recorded as the write path records a conflict:
facts.conflicts.contradiction_propose (a context call, under the curator policy) and contradiction_settle
(consolidation, under either policy)."""

import threading
from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.db import connection, connections, transaction
from django.utils import timezone

from facts.models import ConflictMember, ConflictSet, ConflictStatus, Fact, FactStatus, Project
from facts.conflicts import conflict_resolve, contradiction_propose, contradiction_settle
from tests.conftest import PROJECT
from tests.facts.factories import ConflictSetFactory, FactFactory

pytestmark = pytest.mark.django_db


@dataclass(frozen=True)
class Pair:  # what context.contradictions.Contradiction carries
    winner_id: object
    loser_id: object
    similarity: float = 0.9
    rule: str = "different_name"
    detail: str = "bordeaux against nantes"


def fact(text: str, days_ago: float = 0, **fields) -> Fact:
    return FactFactory(text=text, recorded_from=timezone.now() - timedelta(days=days_ago), **fields)


def propose(*pairs, **kwargs):
    return contradiction_propose(project_id=PROJECT, subject_id="alice", pairs=list(pairs), actor="context", **kwargs)


def settle(*pairs):
    return contradiction_settle(project_id=PROJECT, subject_id="alice", pairs=list(pairs), actor="consolidate")


def members(conflict_set) -> set:
    return set(conflict_set.members.values_list("fact_id", flat=True))


def test_a_pair_opens_a_conflict_set_as_a_write_of_the_winner_would():
    nantes, bordeaux = fact("Paul lives in Nantes.", 3), fact("Paul lives in Bordeaux.")
    [opened] = propose(Pair(bordeaux.id, nantes.id))
    opened.refresh_from_db()
    assert opened.status == ConflictStatus.OPEN and members(opened) == {nantes.id, bordeaux.id}
    assert (opened.signal, opened.signal_detail, opened.similarity) == (
        "different_name",
        "bordeaux against nantes",
        0.9,
    )
    assert set(Fact.objects.values_list("status", flat=True)) == {FactStatus.ACTIVE}  # a curator decides


def test_proposing_again_changes_nothing_and_a_pair_seen_twice_counts_once():
    nantes, bordeaux = fact("Paul lives in Nantes.", 3), fact("Paul lives in Bordeaux.")
    assert len(propose(Pair(bordeaux.id, nantes.id), Pair(bordeaux.id, nantes.id, similarity=0.8))) == 1
    assert propose(Pair(bordeaux.id, nantes.id)) == []
    assert ConflictSet.objects.count() == 1 and ConflictMember.objects.count() == 2


def test_a_curators_dismissal_sticks():
    nantes, bordeaux = fact("Paul lives in Nantes.", 3), fact("Paul lives in Bordeaux.")
    [opened] = propose(Pair(bordeaux.id, nantes.id))
    conflict_resolve(conflict_set=opened, actor="cora", dismiss=True)
    assert propose(Pair(bordeaux.id, nantes.id)) == [] and settle(Pair(bordeaux.id, nantes.id)).sets == []
    assert list(ConflictSet.objects.values_list("status", flat=True)) == [ConflictStatus.DISMISSED]


def test_the_winner_joins_the_open_set_its_loser_is_in():
    # given the loser already in an open set with a third fact
    nantes, lyon, bordeaux = (
        fact("Paul lives in Nantes.", 3),
        fact("Paul lives in Lyon.", 2),
        fact("Paul lives in Bordeaux."),
    )
    existing = ConflictSetFactory(members=[nantes, lyon])
    # then the winner joins it (pairwise membership, as at write time), and no set is opened
    assert propose(Pair(bordeaux.id, nantes.id)) == [existing]
    assert members(existing) == {nantes.id, lyon.id, bordeaux.id} and ConflictSet.objects.count() == 1


def test_pairs_with_a_fact_no_longer_active_or_of_another_scope_are_left_alone():
    nantes, bordeaux = fact("Paul lives in Nantes.", 3), fact("Paul lives in Bordeaux.")
    bobs = fact("Paul lives in Lyon.", subject_id="bob")
    Fact.objects.filter(id=nantes.id).update(status=FactStatus.RETRACTED, recorded_to=timezone.now())
    assert propose(Pair(bordeaux.id, nantes.id), Pair(bobs.id, bordeaux.id)) == []
    assert not ConflictSet.objects.exists()


def test_under_newest_wins_query_time_proposes_nothing():
    Project.objects.create(project_id=PROJECT, conflict_policy="newest_wins")
    nantes, bordeaux = fact("Paul lives in Nantes.", 3), fact("Paul lives in Bordeaux.")
    assert propose(Pair(bordeaux.id, nantes.id)) == [] and not ConflictSet.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_context_call_does_not_wait_for_the_scopes_writers():
    # given a writer of the scope holding its lock (a batch being written) on another connection
    nantes, bordeaux = fact("Paul lives in Nantes.", 3), fact("Paul lives in Bordeaux.")
    held, release = threading.Event(), threading.Event()

    def writer():
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s || chr(31) || %s, 0))", [PROJECT, "alice"])
            held.set()
            release.wait(10)
        connections.close_all()

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert held.wait(10)
        # when a context call proposes its pair without waiting, it proposes nothing now (consolidation will)
        assert propose(Pair(bordeaux.id, nantes.id), wait=False) == []
    finally:
        release.set()
        thread.join()
    assert not ConflictSet.objects.exists()
    # and once the writer is done, it does
    assert len(propose(Pair(bordeaux.id, nantes.id), wait=False)) == 1


def test_settling_under_newest_wins_supersedes_the_loser_as_the_write_path_does():
    Project.objects.create(project_id=PROJECT, conflict_policy="newest_wins")
    nantes, bordeaux = fact("Paul lives in Nantes.", 3), fact("Paul lives in Bordeaux.")
    settled = settle(Pair(bordeaux.id, nantes.id))
    [resolved] = settled.sets
    assert (settled.pairs, settled.superseded, settled.skipped) == (1, 1, 0)
    nantes.refresh_from_db()
    assert nantes.status == FactStatus.SUPERSEDED and nantes.superseded_by_id == bordeaux.id
    assert (resolved.status, resolved.resolved_by) == (ConflictStatus.RESOLVED, "system:newest_wins")
    assert dict(resolved.members.values_list("fact_id", "kept")) == {bordeaux.id: True, nantes.id: False}
    again = settle(Pair(bordeaux.id, nantes.id))  # the loser is no longer active
    assert (again.sets, again.pairs, again.skipped) == ([], 0, 1)


def test_settling_a_chain_supersedes_only_what_a_fact_still_active_contradicts():
    # given pairs C over B and B over A, as two calls recorded them
    Project.objects.create(project_id=PROJECT, conflict_policy="newest_wins")
    a, b = fact("Paul lives in Nantes.", 3), fact("Paul lives in Bordeaux.", 2)
    c = fact("Paul does not live in Bordeaux.", 1)
    settled = settle(Pair(b.id, a.id), Pair(c.id, b.id, rule="negation", detail="negated"))
    assert (settled.superseded, settled.skipped) == (1, 1)
    # then the newest winner goes first: B is superseded by C, and so supersedes nothing
    assert dict(Fact.objects.values_list("id", "status")) == {
        a.id: FactStatus.ACTIVE,
        b.id: FactStatus.SUPERSEDED,
        c.id: FactStatus.ACTIVE,
    }


def test_settling_under_curator_proposes():
    nantes, bordeaux = fact("Paul lives in Nantes.", 3), fact("Paul lives in Bordeaux.")
    [opened] = settle(Pair(bordeaux.id, nantes.id)).sets
    assert opened.status == ConflictStatus.OPEN and members(opened) == {nantes.id, bordeaux.id}
