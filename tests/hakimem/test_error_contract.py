"""What fails outside a view still answers the error contract on /v1/: an invalid Host, an unknown URL, a crash,
a body too large, the database down (and back)."""

import json
import os
import socket
import threading

import pytest
from django.db import close_old_connections, connection
from django.test import Client

from facts.models import Fact
from tests.conftest import PROJECT, error_code, make_client

pytestmark = pytest.mark.django_db


def test_an_invalid_host_answers_json_on_the_api_and_html_elsewhere(api):
    # given a Host header not in ALLOWED_HOSTS (DisallowedHost is raised before any view)
    response = api.get("/v1/facts", {"project_id": PROJECT, "subject_id": "alice"}, HTTP_HOST="evil.example")
    # then the API answers the contract ...
    assert response.status_code == 400 and response["Content-Type"] == "application/json"
    assert error_code(response) == "invalid_request"
    # ... and nothing else changed for the admin, which keeps Django's page
    response = Client().get("/admin/", HTTP_HOST="evil.example")
    assert response.status_code == 400 and response["Content-Type"].startswith("text/html")


def test_an_unknown_api_url_answers_404_in_the_contract(api):
    response = api.get("/v1/nothing-here")
    assert response.status_code == 404 and error_code(response) == "not_found"
    response = api.get("/v1/facts/0c7f1e2a-5d1b-4a36-9d43-2f2d6a0b0e11/nothing-here")
    assert response.status_code == 404 and error_code(response) == "not_found"


@pytest.mark.parametrize(
    "path",
    [
        "/v1/facts/not-a-uuid",
        "/v1/facts/12/history",
        "/v1/events/x",
        "/v1/inspect/%20x",
        "/v1/inspect/abc/replay",
        "/v1/conflicts/" + "9" * 40 + "/resolve",
    ],
)
def test_a_malformed_id_in_a_url_is_an_invalid_request_not_a_missing_endpoint(api, path):
    response = api.post(path, {}, format="json") if path.endswith(("/resolve", "/replay")) else api.get(path)
    assert response.status_code == 400 and error_code(response) == "invalid_request"
    assert "is not an id" in response.json()["error"]["message"]


@pytest.mark.urls("tests.hakimem.urls_crash")
def test_a_crash_outside_drf_answers_500_in_the_contract():
    # given a plain Django view under /v1/ that raises (the same handler500 serves any crash in middleware)
    client = Client(raise_request_exception=False)
    response = client.get("/v1/crash")
    assert response.status_code == 500 and response["Content-Type"] == "application/json"
    assert error_code(response) == "internal_error"
    response = client.get("/crash")
    assert response.status_code == 500 and response["Content-Type"].startswith("text/html")


def test_a_body_past_the_limit_answers_413_before_it_is_read(api, settings):
    # given a Content-Length over the limit (DRF reads the stream itself; Django's check never applied to it)
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000
    body = json.dumps({"project_id": PROJECT, "subject_id": "alice", "text": "x" * 20_000}).encode()
    response = api.generic("POST", "/v1/facts", body, content_type="application/json")
    assert response.status_code == 413 and error_code(response) == "payload_too_large"
    assert response.json()["error"]["details"] == {"max_bytes": 10_000}
    assert Fact.objects.count() == 0


def test_the_largest_documented_batch_fits_under_the_default_limit(api, settings):
    # given the largest batch the README documents: 500 facts of 8,000 characters, each with 16 KiB of metadata,
    # the text non-ASCII and sent \u-escaped (json.dumps' default): 6 bytes a character
    from facts.models import FACT_TEXT_MAX
    from facts.writes import MAX_BATCH
    from hakimem.fields import METADATA_MAX_BYTES

    letters = "абвгдежзиклмнопрстуфхцчшщэюя"
    facts = []
    for i in range(MAX_BATCH):
        words, n = [], i
        while sum(len(w) + 1 for w in words) < FACT_TEXT_MAX:
            n = (n * 1103515245 + 12345) % 2**31
            words.append("".join(letters[(n >> s) % len(letters)] for s in range(0, 24, 4)))
        text = " ".join(words)[:FACT_TEXT_MAX]
        metadata = {"k": "m" * (METADATA_MAX_BYTES - len('{"k":""}'))}
        facts.append(
            {
                "project_id": PROJECT,
                "subject_id": "alice",
                "text": text,
                "category": "c" * 64,
                "kind": "preference",
                "importance": 0.123456789,
                "volatility": "volatile",
                "valid_from": "2024-01-01T00:00:00+02:00",
                "valid_to": "2025-01-01T00:00:00+02:00",
                "metadata": metadata,
            }
        )
    body = json.dumps({"facts": facts}).encode()
    assert len(body) > 25 * 1024 * 1024
    # when it is sent
    response = api.generic("POST", "/v1/facts", body, content_type="application/json")
    # then it is accepted whole, as a job (a batch this heavy is written by the task queue: ingest/writes.py); and a
    # byte more than the limit would have been refused
    from ingest.models import FactWriteJob

    assert response.status_code == 202, response.content[:300]
    assert len(FactWriteJob.objects.get(id=response.json()["job"]["id"]).items) == MAX_BATCH
    assert len(body) <= settings.DATA_UPLOAD_MAX_MEMORY_SIZE


# --- the database down, then back ----------------------------------------------------------------------------


class Outage:
    """A TCP proxy in front of the test database's socket. `down()` closes every connection through it and
    refuses new ones, as a stopped or unreachable server would; `up()` lets them through again."""

    def __init__(self, target: str):
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.open, self.links = True, []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if not self.open:
                client.close()
                continue
            server = socket.socket(socket.AF_UNIX)
            server.connect(self.target)
            self.links += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src, dst):
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def down(self):
        self.open = False
        for s in self.links:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.links = []

    def up(self):
        self.open = True

    def close(self):
        self.down()
        self.listener.close()


@pytest.fixture
def through_outage_proxy(transactional_db):
    """The app's connection pool rebuilt to reach the database through an Outage proxy, with a 1 s wait for a
    connection (HAKI_DB_POOL_TIMEOUT), then put back as it was."""
    settings_dict = connection.settings_dict
    host, port = settings_dict["HOST"], settings_dict["PORT"] or "5432"
    if not host.startswith("/"):
        pytest.skip("the outage proxy fronts the embedded server's socket")
    saved = {k: settings_dict[k] for k in ("HOST", "PORT")}
    saved_options = settings_dict["OPTIONS"]
    connection.close()
    connection.close_pool()
    proxy = Outage(os.path.join(host, f".s.PGSQL.{port}"))
    settings_dict.update(HOST="127.0.0.1", PORT=str(proxy.port))
    pool = dict(saved_options.get("pool") or {"min_size": 1, "max_size": 4})
    settings_dict["OPTIONS"] = {**saved_options, "pool": {**pool, "timeout": 1.0}}
    yield proxy
    connection.close()
    connection.close_pool()
    proxy.close()
    settings_dict.update(saved)
    settings_dict["OPTIONS"] = saved_options


def test_database_down_answers_503_and_the_process_recovers_without_a_restart(through_outage_proxy):
    """What this proves: with the database unreachable (connections cut, new ones refused by the proxy), every
    /v1/ call answers 503 database_unavailable in the contract, within the pool's timeout, and the *same*
    process, pool and settings serve again once the database answers, with no restart or reset in between.
    What it does not: a real PostgreSQL crash and restart (the proxy stands in for the server going away).
    Django's test client leaves out the end-of-request close_old_connections that a served request runs (it is
    what hands a failed connection back to the pool to be discarded), so `api` below runs it after each request."""
    outage = through_outage_proxy
    client = make_client(PROJECT)

    class api:
        @staticmethod
        def get(*args, **kwargs):
            try:
                return client.get(*args, **kwargs)
            finally:
                close_old_connections()

        @staticmethod
        def post(*args, **kwargs):
            try:
                return client.post(*args, **kwargs)
            finally:
                close_old_connections()

    body = {"project_id": PROJECT, "subject_id": "alice", "text": "Alice plays the cello."}
    assert api.post("/v1/facts", body, format="json").status_code == 201

    outage.down()
    for method, path, payload in [
        ("post", "/v1/facts", body),
        ("get", f"/v1/facts?project_id={PROJECT}&subject_id=alice", None),
        ("post", "/v1/context", {"project_id": PROJECT, "subject_id": "alice", "query": "cello"}),
    ]:
        response = getattr(api, method)(path, payload, format="json") if payload else api.get(path)
        assert response.status_code == 503, (path, response.content)
        assert error_code(response) == "database_unavailable" and response["Retry-After"]

    outage.up()
    response = api.get(f"/v1/facts?project_id={PROJECT}&subject_id=alice")
    for _ in range(20):  # the pool reconnects in the background, backing off; give it a few seconds
        if response.status_code == 200:
            break
        threading.Event().wait(0.5)
        response = api.get(f"/v1/facts?project_id={PROJECT}&subject_id=alice")
    assert response.status_code == 200, response.content
    assert [f["text"] for f in response.json()["facts"]] == ["Alice plays the cello."]


def _served(client, method: str, path: str, payload=None):
    """A request through the test client, then the end-of-request close a served request runs. An exception Django
    answered with its error view is not raised again here: the answer is what a client gets."""
    client.raise_request_exception = False
    try:
        return getattr(client, method)(path, payload, format="json") if payload else getattr(client, method)(path)
    finally:
        close_old_connections()


def _assert_unavailable(response) -> None:
    assert response.status_code == 503, response.content
    assert error_code(response) == "database_unavailable" and int(response["Retry-After"]) >= 1


@pytest.fixture
def connection_attempts(monkeypatch):
    """How many times the app asked for a new database connection (the pool's wait, or a connect)."""
    from django.db.backends.postgresql.base import DatabaseWrapper

    attempts, connect = [], DatabaseWrapper.get_new_connection

    def counted(self, *args, **kwargs):
        attempts.append(1)
        return connect(self, *args, **kwargs)

    monkeypatch.setattr(DatabaseWrapper, "get_new_connection", counted)
    return attempts


def test_an_outage_holds_a_process_for_one_wait_at_most_per_retry_window(through_outage_proxy, connection_attempts):
    """Each wait for a connection that cannot come ties up a worker for the pool's timeout: a request waits once,
    and the requests after it, until its Retry-After has passed, answer at once. The probes keep answering."""
    # given a key, and the database going away
    client = make_client(PROJECT)
    listing = f"/v1/facts?project_id={PROJECT}&subject_id=alice"
    assert _served(client, "get", listing).status_code == 200
    connection_attempts.clear()
    through_outage_proxy.down()

    # when a burst of API requests comes
    responses = [_served(client, "get", listing) for _ in range(4)]
    responses.append(_served(client, "post", "/v1/facts", {"project_id": PROJECT, "subject_id": "alice", "text": "x"}))

    # then each answers 503 in the contract, and only the first waited for a connection, once
    for response in responses:
        _assert_unavailable(response)
    assert len(connection_attempts) == 1
    # and liveness answers without the database, readiness says 503 without waiting for it either
    connection_attempts.clear()
    assert _served(Client(), "get", "/v1/health/live").status_code == 200
    ready = _served(Client(), "get", "/v1/health/ready")
    assert ready.status_code == 503 and ready.json()["database"] == "unreachable"
    assert connection_attempts == []


def test_a_connection_lost_before_the_request_commits_answers_503_in_the_contract(through_outage_proxy, monkeypatch):
    # given a request whose database connection is cut once its answer is ready, before its transaction commits
    from rest_framework.views import APIView

    client = make_client(PROJECT)
    finalize = APIView.finalize_response

    def cut_after(self, request, response, *args, **kwargs):
        response = finalize(self, request, response, *args, **kwargs)
        through_outage_proxy.down()
        return response

    monkeypatch.setattr(APIView, "finalize_response", cut_after)

    # when it ends: the row-security middleware's commit fails
    response = _served(
        client, "post", "/v1/facts", {"project_id": PROJECT, "subject_id": "alice", "text": "Alice sings."}
    )

    # then it answers 503 database_unavailable, not a 500
    _assert_unavailable(response)


def test_the_rate_counter_losing_its_connection_answers_503_in_the_contract(monkeypatch):
    # given a connection that is closed under the rate counter (Django's InterfaceError, not a DatabaseError)
    from django.db import InterfaceError

    from hakimem import ratelimit

    def closed(*args, **kwargs):
        raise InterfaceError("connection already closed")

    monkeypatch.setattr(ratelimit, "counter_hit", closed)

    # then the request answers 503 database_unavailable, not a 500
    _assert_unavailable(_served(Client(), "get", f"/v1/facts?project_id={PROJECT}&subject_id=alice"))


def test_a_connect_gives_up_after_a_few_seconds_unless_the_url_says_otherwise():
    from hakimem.dbserver import database_settings, replica_settings

    assert database_settings("postgresql://u@db/app")["OPTIONS"]["connect_timeout"] == 3
    assert database_settings("postgresql://u@db/app?connect_timeout=7")["OPTIONS"]["connect_timeout"] == "7"
    assert replica_settings("postgresql://u@replica/app")["OPTIONS"]["connect_timeout"] == 2


def test_only_a_lost_connection_makes_the_process_answer_503_at_once():
    import psycopg
    from django.db import OperationalError, ProgrammingError

    from hakimem.errors import connection_lost

    def wrapped(error):  # as Django raises a driver's error
        try:
            raise OperationalError(str(error)) from error
        except OperationalError as exc:
            return exc

    assert connection_lost(wrapped(psycopg.OperationalError("server closed the connection unexpectedly")))
    assert connection_lost(wrapped(psycopg.errors.AdminShutdown()))
    assert not connection_lost(wrapped(psycopg.errors.DeadlockDetected()))
    assert not connection_lost(wrapped(psycopg.errors.QueryCanceled()))
    assert not connection_lost(ProgrammingError("relation does not exist"))
