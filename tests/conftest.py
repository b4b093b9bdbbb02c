import os
from pathlib import Path

import psycopg
import pytest
from django.db import connection
from django.contrib.auth.models import Group, User
from rest_framework.test import APIClient

from hakimem.embeddings import circuit_breakers_close, get_embedder
from hakimem.errors import database_answered
from hakimem.services import api_key_create
from stats.services import roles_ensure
from tests.browser import Browser, require_chromium

PROJECT = "proj-a"
OTHER_PROJECT = "proj-b"


# --- a Citus cluster (docs/scaling.md) ----------------------------------------------------------------------------


def _names_a_citus_coordinator(url: str | None) -> bool:
    if not url:
        return False
    try:
        with psycopg.connect(url, connect_timeout=3) as conn:
            return conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'citus'").fetchone() is not None
    except psycopg.Error:
        return False


ON_CITUS = _names_a_citus_coordinator(os.environ.get("DATABASE_URL"))

# What every API request adds to its own queries, in a test: the key's rate counter (hakimem/ratelimit.py),
# then row-level security (hakimem/rowsecurity.py): the savepoint the request's transaction becomes inside
# the test's, the role with the key's lookup (which sets its project), the role and project put back, the savepoint's
# release. In a committed test (every one on a Citus cluster, below): the counter, BEGIN, the role with the key, COMMIT.
REQUEST_OVERHEAD_QUERIES = 4 if ON_CITUS else 5
# A context call's trace is written after its response, in a transaction of its own (context/apis.py), under its
# pending lock: in a test, the lock, its savepoint, the role and project, them put back, the release, the unlock.
# In a committed test: the lock, BEGIN, the role and project, COMMIT, the unlock.
TRACE_TRANSACTION_QUERIES = 5 if ON_CITUS else 6

CITUS_TESTS = Path(__file__).parent / "citus"
CITUS_SKIP_REASON = (
    "needs a Citus cluster: `make citus` (or manage.py citus_cluster start, migrate, citus_distribute), "
    "then DATABASE_URL=<the URL it prints> pytest -m citus"
)

if ON_CITUS:

    @pytest.fixture(scope="session")
    def django_db_setup():
        """The cluster's own database, migrated and distributed by `make citus`, instead of a test database: one made
        by CREATE DATABASE would exist on the coordinator alone, with no workers and no table distributed. Each test
        still rolls back or flushes what it wrote."""


def pytest_collection_modifyitems(config, items):
    """The tests under tests/citus/ need the cluster; without it they are skipped and say how to give it.

    On the cluster every database test commits (Django's TransactionTestCase, flushed after): Citus refuses a
    transaction that reads a shard as the API role after the test's set-up wrote it as the owner ("cannot perform
    query on placements that were modified in this transaction by a different user"). A request's own transaction
    runs as one role from its first statement, so only the test's wrapping transaction meets it."""
    if ON_CITUS:
        for item in items:
            marker = item.get_closest_marker("django_db")
            if marker or "db" in getattr(item, "fixturenames", ()):
                kwargs = {**(marker.kwargs if marker else {}), "transaction": True}
                item.add_marker(pytest.mark.django_db(**kwargs), append=False)
        return
    skip = pytest.mark.skip(reason=CITUS_SKIP_REASON)
    for item in items:
        if CITUS_TESTS in Path(str(item.fspath)).parents:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def hashing_embedder(settings, monkeypatch):
    """The suite runs on the deterministic hashing embedder; tests marked `minilm` switch to the real model."""
    settings.HAKI_EMBED_PROVIDER = "hashing"
    settings.HAKI_CONFLICT_POLICY = "curator"
    settings.HAKI_RECALL_MAX_DISTANCE = None  # as unset: the floor calibrated for the embedder (none for hashing)
    from context import retrieval

    retrieval._table_stats.clear()  # a test's ANALYZE rolls back with it: its statistics must not outlive it
    # A test's ANALYZE is its own transaction's: statistics read after it are final at once (no settling time), so
    # a test's count of queries does not depend on how long it ran.
    monkeypatch.setattr(retrieval, "STATS_SETTLE_SECONDS", 0.0)
    yield
    circuit_breakers_close()  # an embedder a test brought down must not fail the next test at once
    database_answered()  # nor a database a test brought down


def make_client(project_id: str) -> APIClient:
    _, raw = api_key_create(project_id=project_id, label="test")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    client.raw_key = raw
    return client


@pytest.fixture
def api(db) -> APIClient:
    return make_client(PROJECT)


@pytest.fixture
def other_api(db) -> APIClient:
    return make_client(OTHER_PROJECT)


@pytest.fixture
def api_key(transactional_db) -> str:
    """A committed key for PROJECT, for callers on their own connections: a live server's thread, a subprocess."""
    _, raw = api_key_create(project_id=PROJECT, label="test")
    return raw


@pytest.fixture
def other_key(transactional_db) -> str:
    _, raw = api_key_create(project_id=OTHER_PROJECT, label="test")
    return raw


@pytest.fixture
def embed():
    def _embed(text: str):
        return get_embedder().embed([text])[0]

    return _embed


def rows_mentioning(needle: str) -> dict:
    """Every table of the database holding a row whose text contains `needle`, with how many, and every index
    whose definition holds it (a scope's hnsw graph names its subject in its predicate)."""
    found = {}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'"
        )
        for (table,) in cursor.fetchall():
            cursor.execute(f'SELECT count(*) FROM "{table}" t WHERE t::text LIKE %s', [f"%{needle}%"])
            count = cursor.fetchone()[0]
            if count:
                found[table] = count
        cursor.execute("SELECT indexname FROM pg_indexes WHERE indexdef LIKE %s", [f"%{needle}%"])
        for (index,) in cursor.fetchall():
            found[f"index {index}"] = 1
    return found


def error_code(response) -> str:
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"code", "message", "details"}, body
    return body["error"]["code"]


# --- people who use hakimem without writing code ------------------------------------------------------


@pytest.fixture
def roles(db):
    roles_ensure()


def make_user(username: str, *, staff: bool, groups=()):
    user = User.objects.create_user(username=username, password="pw-" + username, is_staff=staff)
    user.groups.set(Group.objects.filter(name__in=groups))
    return user


@pytest.fixture
def curator(roles):
    return make_user("cora", staff=True, groups=["curators"])


@pytest.fixture
def product_owner(roles):
    return make_user("pia", staff=True, groups=["product-owners"])


@pytest.fixture
def plain_user(roles):
    return make_user("nils", staff=False)


@pytest.fixture
def browser(live_server, tmp_path):
    require_chromium()
    browser = Browser(live_server.url, tmp_path / "chromium-profile")
    yield browser
    browser.quit()


@pytest.fixture
def roomy_pool(transactional_db):
    """A fresh connection pool with room for every thread of a concurrency test at once (each holds a connection
    while it waits on a lock): the settings' 4, a gunicorn worker's, is exactly what the busiest of them needs, and
    a connection another test's thread still held would make one wait out the pool's timeout instead of the lock.
    The settings' pool is put back afterwards."""
    from django.db import connection as default_connection

    settings_dict = default_connection.settings_dict
    saved_options = settings_dict["OPTIONS"]
    pool = saved_options.get("pool")
    if not pool:
        yield
        return
    default_connection.close()
    default_connection.close_pool()
    settings_dict["OPTIONS"] = {**saved_options, "pool": {**pool, "max_size": 12}}
    yield
    default_connection.close()
    default_connection.close_pool()
    settings_dict["OPTIONS"] = saved_options


@pytest.fixture
def environment_kept():
    """os.environ as it was: the production server's configuration (config/gunicorn.py) sets variables its workers
    read, and a server a later test starts would inherit them."""
    saved = dict(os.environ)
    yield os.environ
    os.environ.clear()
    os.environ.update(saved)


@pytest.fixture
def gunicorn_conf(environment_kept):
    """The production server's configuration as a fresh gunicorn process reads it: importing it sets the variables
    its workers read, in an environment put back after the test."""
    import importlib

    from config import gunicorn

    return importlib.reload(gunicorn)
