"""The cluster `make citus` made (docs/scaling.md): every table hakimem.distribution names distributed by project in
one co-location group, each shard with its table's indexes and row security policies, the database settings on every
worker, and row security holding on the shards for a request's role and project."""

import pytest
from django.db import connection

from hakimem.distribution import DATABASE_SETTINGS, DISTRIBUTED
from hakimem.rowsecurity import API_ROLE, scope_enter
from tests.conftest import OTHER_PROJECT, PROJECT
from tests.facts.factories import FactFactory

pytestmark = [pytest.mark.citus, pytest.mark.django_db(transaction=True)]


def _rows(sql: str, params=None) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def test_every_distributed_table_is_distributed_by_project_in_one_group():
    rows = _rows(
        "SELECT logicalrelid::text, column_to_column_name(logicalrelid, partkey), colocationid FROM pg_dist_partition"
    )
    placed = {table: (column, group) for table, column, group in rows}
    assert set(placed) == set(DISTRIBUTED)
    assert {column for column, _ in placed.values()} == {"project_id"}
    assert len({group for _, group in placed.values()}) == 1


def test_each_shard_has_its_tables_indexes_and_policies():
    shards = _rows("SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = 'facts_fact'::regclass")[0][0]
    graphs = _rows(
        "SELECT sum(result::int) FROM run_command_on_workers("
        "$$SELECT count(*) FROM pg_indexes WHERE indexname LIKE 'facts_fact_embedding_hnsw_%'$$)"
    )[0][0]
    policies = _rows(
        "SELECT sum(result::int) FROM run_command_on_workers("
        "$$SELECT count(*) FROM pg_policies WHERE tablename ~ '^facts_fact_[0-9]+$'$$)"
    )[0][0]
    assert shards > 1 and graphs == shards and policies == 2 * shards


def test_every_worker_has_the_database_settings():
    for (setting,) in _rows(
        "SELECT result FROM run_command_on_workers($$SELECT array_to_string(setconfig, ',') FROM"
        " pg_db_role_setting s JOIN pg_database d ON d.oid = s.setdatabase"
        " WHERE d.datname = current_database() AND s.setrole = 0$$)"
    ):
        assert set(setting.split(",")) == {f"{name}={value}" for name, value in DATABASE_SETTINGS.items()}


def test_every_registered_worker_lets_the_request_roles_log_in():
    """cluster_start (and add-worker, which runs it for one worker more) sets LOGIN on each worker itself."""
    workers = _rows("SELECT count(*) FROM pg_dist_node WHERE groupid <> 0 AND isactive")[0][0]
    logins = _rows(
        "SELECT result FROM run_command_on_workers("
        "$$SELECT count(*) FROM pg_roles WHERE rolname IN ('hakimem_api', 'hakimem_staff') AND rolcanlogin$$)"
    )
    assert len(logins) == workers >= 2 and {result for (result,) in logins} == {"2"}


def test_the_api_role_sees_its_own_project_only_on_the_shards():
    FactFactory(project_id=PROJECT, text="Alice keeps bees.")
    FactFactory(project_id=OTHER_PROJECT, text="Bob keeps goats.")
    from django.db import transaction

    with transaction.atomic():
        scope_enter(API_ROLE, PROJECT)
        # no project filter: only row security keeps the other project's rows out, on the workers
        seen = _rows("SELECT DISTINCT project_id FROM facts_fact")
        transaction.set_rollback(True)
    assert seen == [(PROJECT,)]
    with transaction.atomic():
        scope_enter(API_ROLE, "")
        assert _rows("SELECT count(*) FROM facts_fact") == [(0,)]
        transaction.set_rollback(True)
