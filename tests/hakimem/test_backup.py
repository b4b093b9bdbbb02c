"""manage.py backup and restore: a round trip gives back every row and the same context call answer; the dump is
its owner's only."""

import os
import stat
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from bench.server import database_url
from tests.conftest import PROJECT, make_client

TABLES = (
    "facts_fact",
    "facts_event",
    "facts_conflictset",
    "facts_conflictmember",
    "traces_trace",
    "traces_decision",
    "hakimem_apikey",
)


def counts(cursor=None) -> dict[str, int]:
    if cursor is None:
        with connection.cursor() as cursor:
            return counts(cursor)
    found = {}
    for table in TABLES:
        cursor.execute(f"SELECT count(*) FROM {table}")
        found[table] = cursor.fetchone()[0]
    return found


def served(client) -> list[str]:
    response = client.post(
        "/v1/context", {"project_id": PROJECT, "subject_id": "alice", "query": "Where does Paul live?"}, format="json"
    )
    assert response.status_code == 200, response.content
    return [f["id"] for f in response.json()["facts"]]


@pytest.mark.django_db(transaction=True)
def test_restore_gives_back_what_the_backup_held(tmp_path):
    client = make_client(PROJECT)
    client.post(
        "/v1/facts",
        {
            "facts": [
                {
                    "project_id": PROJECT,
                    "subject_id": "alice",
                    "text": "Paul lives in Nantes with his wife and their two children.",
                },
                {
                    "project_id": PROJECT,
                    "subject_id": "alice",
                    "text": "Paul lives in Bordeaux with his wife and their two children.",
                },
                {
                    "project_id": PROJECT,
                    "subject_id": "alice",
                    "text": "Paul works as a carpenter in a small workshop.",
                },
            ]
        },
        format="json",
    )
    client.post(
        "/v1/events",
        {
            "project_id": PROJECT,
            "subject_id": "alice",
            "text": "Paul moved house.",
            "occurred_at": "2026-01-01T10:00:00Z",
        },
        format="json",
    )
    answer_before = served(client)
    before = counts()
    assert before["facts_conflictmember"] == 2 and before["traces_decision"] >= 3

    call_command("backup", out=tmp_path / "backups" / "memory.dump")
    # the dump holds every subject's memory: only its owner may read it, or list its folder
    assert stat.S_IMODE((tmp_path / "backups" / "memory.dump").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "backups").stat().st_mode) == 0o700
    client.delete(f"/v1/subjects/alice?project_id={PROJECT}")
    client.post("/v1/facts", {"project_id": PROJECT, "subject_id": "bob", "text": "Bob has a cat."}, format="json")
    assert counts() != before

    with connection.cursor() as cursor:
        cursor.execute("SELECT oid FROM pg_extension WHERE extname = 'vector'")
        extension = cursor.fetchone()
    with pytest.raises(CommandError, match="--yes"):
        call_command("restore", tmp_path / "backups" / "memory.dump")
    call_command("restore", tmp_path / "backups" / "memory.dump", yes=True)
    after = counts()
    assert after == before
    # and the extension was left as it was (only its owner, a superuser, could drop it and make it again)
    with connection.cursor() as cursor:
        cursor.execute("SELECT oid FROM pg_extension WHERE extname = 'vector'")
        assert cursor.fetchone() == extension
    assert served(client) == answer_before
    # and the API role has not regained the tables it must not read (tables made again take default privileges)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT has_table_privilege('hakimem_api', 'auth_user', 'SELECT'),"
            " has_table_privilege('hakimem_api', 'django_session', 'SELECT'),"
            " has_table_privilege('hakimem_api', 'hakimem_apikey', 'SELECT')"
        )
        assert cursor.fetchone() == (False, False, False)


def test_a_missing_backup_file_is_refused(tmp_path):
    with pytest.raises(CommandError, match="no such backup"):
        call_command("restore", tmp_path / "nothing.dump", yes=True)


@pytest.mark.django_db(transaction=True)
def test_restore_fills_a_new_empty_database(tmp_path):
    """A move to a new server (docs/scaling.md): the backup restored into a database with no table and no extension,
    which `DROP POLICY IF EXISTS` on a missing table made pg_restore --clean refuse; the full-text match LEAKPROOF
    there too."""
    client = make_client(PROJECT)
    client.post(
        "/v1/facts", {"project_id": PROJECT, "subject_id": "alice", "text": "Paul lives in Nantes."}, format="json"
    )
    served(client)
    before = counts()
    call_command("backup", out=tmp_path / "memory.dump")
    target = {**connection.settings_dict, "NAME": f"{connection.settings_dict['NAME']}_restored"}
    with psycopg.connect(database_url(connection.settings_dict), autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{target["NAME"]}"')
        admin.execute(f'CREATE DATABASE "{target["NAME"]}"')
        try:
            root = Path(__file__).resolve().parents[2]
            restored = subprocess.run(
                [sys.executable, "manage.py", "restore", str(tmp_path / "memory.dump"), "--yes"],
                cwd=root,
                env={**os.environ, "DATABASE_URL": database_url(target)},
                capture_output=True,
                text=True,
            )
            assert restored.returncode == 0, restored.stderr
            assert "into an empty database" in restored.stdout
            with psycopg.connect(database_url(target)) as conn, conn.cursor() as cursor:
                assert counts(cursor) == before
                cursor.execute("SELECT count(*) FROM pg_extension WHERE extname = 'vector'")
                assert cursor.fetchone() == (1,)
                cursor.execute("SELECT has_table_privilege('hakimem_api', 'hakimem_apikey', 'SELECT')")
                assert cursor.fetchone() == (False,)
                # the full-text match LEAKPROOF again (a pg_catalog attribute no dump holds): the lexical leg's GIN
                # index stays an index condition under row security
                cursor.execute(
                    "SELECT proleakproof FROM pg_proc WHERE oid = 'ts_match_vq(tsvector, tsquery)'::regprocedure"
                )
                assert cursor.fetchone() == (True,)
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{target["NAME"]}" WITH (FORCE)')
