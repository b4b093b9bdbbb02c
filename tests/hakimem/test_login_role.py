"""The application's login role (docs/isolation.md): what a request's SQL could reach if it left its role. Connected
as `hakimem_app`, the role the web server's workers log in as, on the test database with two projects' rows."""

import psycopg
import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client

from bench.server import database_url
from hakimem.dbserver import APP_LOGIN_ROLE
from hakimem.models import hash_key
from hakimem.rowsecurity import API_ROLE, STAFF_ROLE
from hakimem.services import api_key_create
from tests.conftest import OTHER_PROJECT, PROJECT
from tests.facts.factories import FactFactory

# What a person's account, session and the admin's history hold, and every project's key hashes.
CREDENTIAL_TABLES = [
    "auth_user",
    "auth_user_groups",
    "auth_user_user_permissions",
    "auth_group",
    "auth_permission",
    "auth_group_permissions",
    "django_session",
    "django_admin_log",
    "hakimem_apikey",
    "hakimem_staffprojectaccess",
]


def app_connection() -> psycopg.Connection:
    return psycopg.connect(database_url({**connection.settings_dict, "USER": APP_LOGIN_ROLE, "PASSWORD": ""}))


@pytest.fixture
def two_projects(transactional_db):
    """Committed: facts of two projects, a key of each, a signed-in staff user (a session, a password hash)."""
    for project, subject in ((PROJECT, "alice"), (OTHER_PROJECT, "zed-the-other")):
        for i in range(3):
            FactFactory(project_id=project, subject_id=subject, text=f"{subject} noted item {i}.")
    keys = {project: api_key_create(project_id=project, label="test")[1] for project in (PROJECT, OTHER_PROJECT)}
    client = Client()
    client.force_login(User.objects.create_user("root", password="pw-root", is_staff=True, is_superuser=True))
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE facts_fact")
    return keys


def _request_as_api(conn, raw_key: str) -> None:
    """What an API request's transaction does: the API role, then the key's project from its lookup."""
    conn.execute("SELECT set_config('role', %s, true)", [API_ROLE])
    assert conn.execute("SELECT key_project_id FROM hakimem_api_key_find(%s, true)", [hash_key(raw_key)]).fetchone()


def _denied(conn, table: str) -> bool:
    try:
        with conn.transaction():
            conn.execute(f"SELECT * FROM {table} LIMIT 1")
    except psycopg.errors.InsufficientPrivilege:
        return True
    return False


def test_the_login_role_is_no_superuser_bypasses_nothing_and_owns_nothing(transactional_db):
    with app_connection() as conn:
        row = conn.execute(
            "SELECT rolsuper, rolbypassrls, rolcreaterole, rolcreatedb FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
        owned = conn.execute("SELECT count(*) FROM pg_class WHERE relowner = current_user::regrole").fetchone()[0]
    assert row == (False, False, False, False)
    assert owned == 0


def test_leaving_the_role_inside_a_request_reaches_no_other_project_and_no_credential(two_projects):
    with app_connection() as conn:
        # given a request's transaction as the API role, with its key's project
        _request_as_api(conn, two_projects[PROJECT])
        # when its SQL leaves the role
        conn.execute("RESET ROLE")
        assert conn.execute("SELECT current_user").fetchone()[0] == APP_LOGIN_ROLE
        # then it still sees only its project's facts
        seen = {r[0] for r in conn.execute("SELECT DISTINCT project_id FROM facts_fact").fetchall()}
        assert seen == {PROJECT}
        # and no account, session, admin history or key
        assert [t for t in CREDENTIAL_TABLES if not _denied(conn, t)] == []


def test_the_api_role_reads_no_credential_and_finds_a_key_by_its_hash_only(two_projects):
    with app_connection() as conn:
        _request_as_api(conn, two_projects[PROJECT])
        assert conn.execute("SELECT current_user").fetchone()[0] == API_ROLE
        assert [t for t in CREDENTIAL_TABLES if not _denied(conn, t)] == []
        # an invented key finds nothing
        assert conn.execute("SELECT * FROM hakimem_api_key_find(%s, true)", [hash_key("invented")]).fetchall() == []


def test_the_staff_role_reads_the_admins_tables(two_projects):
    # the admin's role keeps what the admin needs: sign-in, sessions, its history, the keys
    with app_connection() as conn:
        conn.execute("SELECT set_config('role', %s, true), set_config('hakimem.project_id', '*', true)", [STAFF_ROLE])
        assert [t for t in CREDENTIAL_TABLES if _denied(conn, t)] == []
        assert conn.execute("SELECT count(*) FROM django_session").fetchone()[0] == 1


def test_the_table_statistics_name_only_the_requests_own_subjects(two_projects):
    # given statistics that list both projects' subjects (read as the owner)
    with connection.cursor() as cursor:
        cursor.execute("SELECT subjects FROM hakimem_table_stats('facts_fact', '')")
        assert {"alice", "zed-the-other"} <= set(cursor.fetchone()[0])
    with app_connection() as conn:
        # when a request of one project reads them, in its role and after leaving it
        _request_as_api(conn, two_projects[PROJECT])
        in_role = conn.execute("SELECT subjects FROM hakimem_table_stats('facts_fact', '')").fetchone()[0]
        conn.execute("RESET ROLE")
        left = conn.execute("SELECT subjects FROM hakimem_table_stats('facts_fact', '')").fetchone()[0]
    # then only its own subject is named, the other project's left unnamed (its share kept for the estimates)
    assert [s for s in in_role if s is not None] == ["alice"] and "zed-the-other" not in in_role
    assert [s for s in left if s is not None] == ["alice"] and "zed-the-other" not in left


def test_make_runs_workers_log_in_as_the_application_role(environment_kept, gunicorn_conf, tmp_path):
    # given `make run` with nothing configured: the embedded server (this suite's, HAKI_PGDATA)
    import logging
    from types import SimpleNamespace

    for name in ("DATABASE_URL", "HAKI_APP_DATABASE_URL", "HAKI_ROW_SECURITY"):
        environment_kept.pop(name, None)
    environment_kept["PROMETHEUS_MULTIPROC_DIR"] = str(tmp_path / "metrics")

    # when gunicorn's master starts
    gunicorn_conf.on_starting(
        SimpleNamespace(cfg=SimpleNamespace(workers=1), log=logging.getLogger("test"), handle_term=None)
    )
    # then the URL it hands its workers logs in as the application's role
    with psycopg.connect(environment_kept["DATABASE_URL"]) as conn:
        assert conn.execute("SELECT current_user").fetchone()[0] == APP_LOGIN_ROLE
