"""The planner's statistics the context path weighs words and sizes scopes with, on a cluster (context/retrieval.py,
hakimem/citus.py): read from the shards, not the coordinator's empty shells; a request's from its project's shard
alone, naming no other project's subject; a process reads their version again only after CITUS_STATS_RECHECK_SECONDS."""

import pytest
from django.db import connection, transaction

from context import retrieval
from hakimem.rowsecurity import API_ROLE, scope_enter
from tests.conftest import OTHER_PROJECT, PROJECT
from tests.facts.factories import FactFactory

pytestmark = [pytest.mark.citus, pytest.mark.django_db(transaction=True)]


def _shard(project_id: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT get_shard_id_for_distribution_column('facts_fact', %s)", [project_id])
        return cursor.fetchone()[0]


def _analyze():
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE facts_fact")


def test_a_requests_statistics_are_its_projects_shards():
    neighbour = next(f"proj-n{i}" for i in range(1000) if _shard(f"proj-n{i}") == _shard(PROJECT))
    assert _shard(OTHER_PROJECT) != _shard(PROJECT)
    for i in range(30):
        FactFactory(project_id=PROJECT, text=f"Alice likes item {i}.", subject_id="s0")
    for i in range(10):
        FactFactory(project_id=neighbour, text=f"Alice rides bike {i}.", subject_id="neighbour-subject")
    for i in range(12):
        FactFactory(project_id=OTHER_PROJECT, text=f"Zebra stripes {i}.", subject_id="other-subject")
    _analyze()

    whole = retrieval.table_stats()  # the owner: every shard
    assert whole.rows == 52
    assert whole.term_freq["alice"] == pytest.approx(40 / 52) and whole.term_freq["zebra"] == pytest.approx(12 / 52)
    assert whole.scope_rows("s0") == pytest.approx(30) and whole.scope_rows("other-subject") == pytest.approx(12)

    with transaction.atomic():
        scope_enter(API_ROLE, PROJECT)
        retrieval.table_stats_refresh(PROJECT)
        mine = retrieval.table_stats(retrieval.FACTS, PROJECT)
        transaction.set_rollback(True)
    assert mine.rows == 40  # the project's shard, which the neighbour's rows share
    assert mine.term_freq["alice"] == pytest.approx(1.0) and "zebra" not in mine.term_freq
    assert mine.scope_rows("s0") == pytest.approx(30)
    assert set(mine.subject_freq) == {"s0"}  # the neighbour's subject is counted, not named


def test_the_version_is_read_again_after_the_recheck_time(monkeypatch):
    monkeypatch.setattr(retrieval, "CITUS_STATS_RECHECK_SECONDS", 3600.0)
    FactFactory(project_id=PROJECT, text="Alice likes tea.", subject_id="s0")
    _analyze()
    first = retrieval.table_stats_refresh()
    assert dict((name, rows) for name, rows, _, _ in first.tables)["facts_fact"] == 1
    FactFactory(project_id=PROJECT, text="Alice likes coffee.", subject_id="s0")
    _analyze()
    assert retrieval.table_stats_refresh() == first and retrieval.table_stats().rows == 1
    monkeypatch.setattr(retrieval, "CITUS_STATS_RECHECK_SECONDS", 0.0)
    retrieval._table_stats[None] = retrieval.replace(retrieval._table_stats[None], recheck_at=0.0)
    assert retrieval.table_stats_refresh() != first and retrieval.table_stats().rows == 2
