"""`manage.py citus_distribute` run again after a run that stopped partway (a lock timeout, a lost connection, a
worker down): it goes on to the end, the tables already distributed skipped, rather than deciding from the first table
alone that it had run. It lets the request roles log in on a worker where Citus copied them NOLOGIN, and makes the
full-text match LEAKPROOF on every node.

The database is made beside the cluster's own, on its nodes, as tests/citus/test_move.py makes its own, and dropped
afterwards."""

import os
from urllib.parse import urlparse

import psycopg
import pytest

from hakimem.citus import REQUEST_ROLES_NOLOGIN_SQL, request_roles_log_in
from hakimem.distribution import DISTRIBUTED, SCOPE_WRITE_TRIGGERS, distribute_sql, distribution_done_sql
from hakimem.rowsecurity import API_ROLE
from tests.citus.test_move import _drop, _run, _url, _worker_ports

pytestmark = pytest.mark.citus

RESUMED = "hakimem_resume"


@pytest.fixture
def resumed():
    """A migrated database on the cluster (Citus on every node, the workers registered, pgvector), not distributed."""
    coordinator, workers = urlparse(os.environ["DATABASE_URL"]), _worker_ports()
    for port in [coordinator.port, *workers]:
        _drop(port, RESUMED)
    try:
        for port in [coordinator.port, *workers]:
            with psycopg.connect(_url("postgres", port), autocommit=True) as conn:
                conn.execute(f"CREATE DATABASE {RESUMED}")
            with psycopg.connect(_url(RESUMED, port), autocommit=True) as conn:
                conn.execute("CREATE EXTENSION citus")
        with psycopg.connect(_url(RESUMED), autocommit=True) as conn:
            conn.execute("SELECT citus_set_coordinator_host(%s, %s)", [coordinator.hostname, coordinator.port])
            for port in workers:
                conn.execute("SELECT citus_add_node(%s, %s)", [coordinator.hostname, port])
            conn.execute("CREATE EXTENSION vector")
        _run(RESUMED, "manage.py", "migrate", "--noinput", "-v0")
        yield
    finally:
        for port in [coordinator.port, *workers]:
            _drop(port, RESUMED)
            # roles are the server's: whatever happened here, the cluster's own database needs them to log in
            if port != coordinator.port:
                with psycopg.connect(_url("postgres", port), autocommit=True) as conn:
                    request_roles_log_in(conn)


def test_a_distribution_stopped_partway_runs_again_to_its_end(resumed):
    # given a run that stopped right after distributing facts_fact (the triggers and foreign keys dropped, three
    # tables distributed), and a worker where the request roles cannot log in
    statements = distribute_sql()
    stop = next(i for i, s in enumerate(statements) if "create_distributed_table('facts_fact'" in s)
    with psycopg.connect(_url(RESUMED), autocommit=True) as conn:
        for statement in statements[: stop + 1]:
            conn.execute(statement)
        assert not conn.execute(distribution_done_sql()).fetchone()[0]
    worker = _worker_ports()[0]
    with psycopg.connect(_url("postgres", worker), autocommit=True) as conn:
        conn.execute(f"SET citus.enable_ddl_propagation = off; ALTER ROLE {API_ROLE} NOLOGIN")

    # when citus_distribute runs
    out = _run(RESUMED, "manage.py", "citus_distribute")

    # then it went on from there to the end: every table distributed in one co-location group, the foreign keys back,
    # no trigger left, and the roles may log in on every worker
    assert f"3 of {len(DISTRIBUTED)} tables already distributed" in out
    fixed = [line for line in out.splitlines() if f"may log in on worker 127.0.0.1:{worker} again" in line]
    assert len(fixed) == 1 and API_ROLE in fixed[0]
    with psycopg.connect(_url(RESUMED)) as conn:
        placed = conn.execute("SELECT logicalrelid::text, colocationid FROM pg_dist_partition").fetchall()
        assert sorted(t for t, _ in placed) == sorted(DISTRIBUTED)
        assert len({group for _, group in placed}) == 1
        assert conn.execute(distribution_done_sql()).fetchone()[0]
        triggers = conn.execute(
            "SELECT count(*) FROM pg_trigger WHERE tgname = ANY(%s)", [[name for _, name in SCOPE_WRITE_TRIGGERS]]
        ).fetchone()[0]
        assert triggers == 0
        cannot = conn.execute("SELECT result FROM run_command_on_workers(%s)", [REQUEST_ROLES_NOLOGIN_SQL]).fetchall()
        assert cannot == [("",)] * len(_worker_ports())
        # the full-text match LEAKPROOF on every node (Citus does not pass a pg_catalog attribute on)
        leakproof = "SELECT proleakproof FROM pg_proc WHERE oid = 'ts_match_vq(tsvector, tsquery)'::regprocedure"
        assert conn.execute(leakproof).fetchone() == (True,)
        on_workers = conn.execute("SELECT result FROM run_command_on_workers(%s)", [leakproof]).fetchall()
        assert on_workers == [("t",)] * len(_worker_ports())
    # and run once more, it knows it has run
    assert "already distributed: only the database settings" in _run(RESUMED, "manage.py", "citus_distribute")
