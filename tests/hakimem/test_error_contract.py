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
    response = api.get("/v1/facts/not-a-uuid")
    assert response.status_code == 404 and error_code(response) == "not_found"


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
    from facts.services import MAX_BATCH
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
        facts.append({"project_id": PROJECT, "subject_id": "alice", "text": text, "category": "c" * 64,
                      "kind": "preference", "importance": 0.123456789, "volatility": "volatile",
                      "valid_from": "2024-01-01T00:00:00+02:00", "valid_to": "2025-01-01T00:00:00+02:00",
                      "metadata": metadata})
    body = json.dumps({"facts": facts}).encode()
    assert len(body) > 25 * 1024 * 1024
    # when it is sent
    response = api.generic("POST", "/v1/facts", body, content_type="application/json")
    # then it is stored whole; and a byte more than the limit would have been refused
    assert response.status_code == 201, response.content[:300]
    assert Fact.objects.count() == MAX_BATCH
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
    for method, path, payload in [("post", "/v1/facts", body), ("get", f"/v1/facts?project_id={PROJECT}&subject_id=alice", None),
                                  ("post", "/v1/context", {"project_id": PROJECT, "subject_id": "alice", "query": "cello"})]:
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
