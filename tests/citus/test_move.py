"""The move from one server to a cluster (docs/scaling.md, "Moving from one server"), as an operator runs it, with
rows in it: a database of one server holding two projects' memory and traces, `manage.py backup`, a new database
on the cluster (Citus and pgvector on every node, the workers registered), `manage.py restore` into it and `manage.py
citus_distribute`. Then every table holds the same rows, and each traced context call asked again serves the same
items in the same order (scripts/check_move.py); the coordinator keeps no copy of the distributed rows.

The two databases are made beside the cluster's own, on its nodes, and dropped afterwards; each command runs as its
own process with DATABASE_URL naming one of them, as an operator's would."""

import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

import psycopg
import pytest

pytestmark = pytest.mark.citus

ROOT = Path(__file__).resolve().parents[2]
SOURCE, TARGET = "hakimem_move_source", "hakimem_move_target"

# Two projects' memory through the API, and context calls that leave traces and access counts.
POPULATE = """
from scripts import _django
_django.setup()
from bench.harness_client import client_with_own_key
for project, subject in (("move-a", "alice"), ("move-b", "bob")):
    client, cleanup = client_with_own_key(project, label="move test")
    facts = [{"project_id": project, "subject_id": subject, "text": f"{subject} planted tree number {i} in the orchard."}
             for i in range(40)]
    assert client.post("/v1/facts", {"facts": facts}, format="json").status_code == 201
    events = [{"project_id": project, "subject_id": subject, "text": f"{subject} watered row {i}.",
               "occurred_at": f"2026-03-{i + 1:02d}T10:00:00Z"} for i in range(20)]
    assert client.post("/v1/events", {"events": events}, format="json").status_code == 201
    for query in ("Which trees did they plant?", "When was row 7 watered?", "orchard"):
        payload = {"project_id": project, "subject_id": subject, "query": query, "budget_tokens": 200}
        assert client.post("/v1/context", payload, format="json").status_code == 200
    cleanup()
"""


def _url(database: str, port: int | None = None) -> str:
    coordinator = urlparse(os.environ["DATABASE_URL"])
    return coordinator._replace(
        netloc=f"{coordinator.username}@{coordinator.hostname}:{port or coordinator.port}", path=f"/{database}"
    ).geturl()


def _run(database: str, *args: str) -> str:
    env = {**os.environ, "DATABASE_URL": _url(database), "HAKI_EMBED_PROVIDER": "hashing"}
    done = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, f"{args}: {done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def _worker_ports() -> list[int]:
    with psycopg.connect(os.environ["DATABASE_URL"]) as conn:
        return [row[0] for row in conn.execute("SELECT nodeport FROM pg_dist_node WHERE groupid <> 0 ORDER BY 1")]


def _drop(port: int, database: str) -> None:
    with psycopg.connect(_url("postgres", port), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")


@pytest.fixture
def databases():
    """The one server's database (plain: no citus extension) and the new cluster database, made as
    docs/scaling.md's step 2 says; dropped afterwards, the coordinator's first."""
    coordinator, workers = urlparse(os.environ["DATABASE_URL"]), _worker_ports()
    for port in [coordinator.port, *workers]:
        _drop(port, TARGET)
    _drop(coordinator.port, SOURCE)
    try:
        with psycopg.connect(_url("postgres"), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {SOURCE}")
        for port in [coordinator.port, *workers]:
            with psycopg.connect(_url("postgres", port), autocommit=True) as conn:
                conn.execute(f"CREATE DATABASE {TARGET}")
            with psycopg.connect(_url(TARGET, port), autocommit=True) as conn:
                conn.execute("CREATE EXTENSION citus")
        with psycopg.connect(_url(TARGET), autocommit=True) as conn:
            conn.execute("SELECT citus_set_coordinator_host(%s, %s)", [coordinator.hostname, coordinator.port])
            for port in workers:
                conn.execute("SELECT citus_add_node(%s, %s)", [coordinator.hostname, port])
            conn.execute("CREATE EXTENSION vector")
        yield
    finally:
        for port in [coordinator.port, *workers]:
            _drop(port, TARGET)
        _drop(coordinator.port, SOURCE)


def test_a_populated_server_moves_to_the_cluster_with_the_same_rows_and_packets(databases, tmp_path):
    # given one server's database with two projects' memory and traces, backed up
    _run(SOURCE, "manage.py", "migrate", "--noinput", "-v0")
    _run(SOURCE, "-c", POPULATE)
    _run(SOURCE, "manage.py", "backup", "--out", str(tmp_path / "hakimem.dump"))
    _run(SOURCE, "scripts/check_move.py", "snapshot", "--out", str(tmp_path / "before.json"))

    # when it is restored into the new cluster database and distributed
    assert "into an empty database" in _run(TARGET, "manage.py", "restore", str(tmp_path / "hakimem.dump"), "--yes")
    # the restore's grants to the request roles make Citus copy them to the workers as the coordinator has them,
    # NOLOGIN (roles are the server's, not the database's): citus_distribute lets them log in again at its end
    _run(TARGET, "manage.py", "citus_distribute")

    # then the rows and the packets are the same
    _run(TARGET, "scripts/check_move.py", "snapshot", "--out", str(tmp_path / "after.json"))
    compared = subprocess.run(
        [
            sys.executable,
            "scripts/check_move.py",
            "compare",
            str(tmp_path / "before.json"),
            str(tmp_path / "after.json"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert compared.returncode == 0, compared.stdout
    assert "the same after" in compared.stdout
    with psycopg.connect(_url(TARGET)) as conn:
        # every distributed table's rows are in its shards, none left in the coordinator's own table
        assert conn.execute("SELECT count(*) FROM pg_dist_partition").fetchone()[0] > 20
        assert conn.execute("SELECT count(*) FROM facts_fact").fetchone()[0] == 80
        left = conn.execute("SELECT sum(pg_relation_size(logicalrelid)) FROM pg_dist_partition").fetchone()[0]
        assert left == 0
