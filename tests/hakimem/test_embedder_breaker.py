"""The embedder's circuit breaker: once the embedder has failed a few times in a row, calls answer at once
(writes 503 embedder_unavailable, context calls degraded, readiness not ready) instead of each waiting for
its timeout; after a cool-down one call tries it again."""

import http.server
import json
import socket
import threading
import time

import pytest
from django.test import override_settings

from hakimem.embeddings import CircuitBreaker, EmbedderCircuitOpen, get_embedder
from tests.conftest import PROJECT, error_code
from tests.facts.factories import FactFactory

TIMEOUT = 0.5


class _Embeddings(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint that hangs past the client's timeout ("down") or answers ("up")."""

    mode = "down"
    requests = 0

    def do_POST(self):
        type(self).requests += 1
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.mode == "down":
            time.sleep(TIMEOUT * 3)
            return
        data = [{"index": i, "embedding": [1.0] + [0.0] * 383} for i, _ in enumerate(body["input"])]
        payload = json.dumps({"data": data}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.fixture
def embedder_server(settings):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Embeddings)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Embeddings.mode, _Embeddings.requests = "down", 0
    settings.HAKI_EMBED_PROVIDER = "openai"
    settings.HAKI_EMBED_URL = f"http://127.0.0.1:{server.server_address[1]}/v1/embeddings"
    settings.HAKI_EMBED_TIMEOUT = TIMEOUT
    settings.HAKI_EMBED_BREAKER_FAILURES = 2
    settings.HAKI_EMBED_BREAKER_COOLDOWN = 60.0
    yield _Embeddings
    server.shutdown()


def _write(api, text="Alice plays the cello."):
    return api.post("/v1/facts", {"project_id": PROJECT, "subject_id": "alice", "text": text}, format="json")


def test_after_two_timeouts_writes_answer_503_at_once_without_asking_the_embedder(api, embedder_server):
    # given an embedder that hangs: two writes each wait for the timeout and are refused
    for _ in range(2):
        assert error_code(_write(api)) == "embedder_unavailable"
    assert embedder_server.requests == 2
    # when a third write comes
    response = _write(api)
    # then it is refused at once (the circuit is open: no request to wait for), in the error contract
    assert response.status_code == 503 and error_code(response) == "embedder_unavailable"
    assert response.json()["error"]["details"] == {"circuit": "open"}
    assert 1 <= int(response["Retry-After"]) <= 60
    assert embedder_server.requests == 2


def test_while_the_circuit_is_open_context_calls_are_degraded_at_once(api, embedder_server):
    # given a stored fact (embedded before the embedder went down) and an embedder whose circuit opened
    with override_settings(HAKI_EMBED_PROVIDER="hashing"):
        FactFactory(text="Alice plays the cello.")
    for _ in range(2):
        _write(api, "Something else.")
    asked = embedder_server.requests
    # when a context call comes
    response = api.post(
        "/v1/context", {"project_id": PROJECT, "subject_id": "alice", "query": "What does Alice play?"}, format="json"
    )
    # then it is served on the degraded path (full text and recency) without asking the embedder
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "degraded" and body["warnings"] == ["embedder_unavailable"]
    assert [f["text"] for f in body["facts"]] == ["Alice plays the cello."]
    assert embedder_server.requests == asked


def test_readiness_says_the_embedder_is_down_and_recovers_after_the_cool_down(client, api, embedder_server):
    # given an embedder that hangs, its circuit on a clock the test moves (cool-down 60 s)
    now = [1000.0]
    get_embedder().breaker.clock = lambda: now[0]
    for _ in range(2):
        _write(api)
    # when readiness is probed while the circuit is open
    response = client.get("/v1/health/ready")
    # then it is not ready, names the embedder and its open circuit, and did not ask it
    assert response.status_code == 503
    assert response.json()["embedder_status"] == "unavailable" and response.json()["embedder_circuit"] == "open"
    assert embedder_server.requests == 2
    # when the embedder is back and the cool-down has passed
    embedder_server.mode = "up"
    now[0] += 61
    body = client.get("/v1/health/ready").json()
    # then the probe is the half-open trial: it reaches the embedder, succeeds and closes the circuit
    assert body["status"] == "ready" and body["embedder_circuit"] == "closed"
    assert embedder_server.requests == 3
    # and writes go through again
    assert _write(api).status_code == 201


def test_readiness_forgets_a_recent_success_once_the_circuit_opens(client, api, embedder_server):
    # given a ready embedder (its success is remembered 30 s)
    embedder_server.mode = "up"
    assert client.get("/v1/health/ready").status_code == 200
    # when it goes down and two writes fail
    embedder_server.mode = "down"
    for _ in range(2):
        _write(api)
    # then readiness says so at once
    body = client.get("/v1/health/ready").json()
    assert body["embedder_status"] == "unavailable" and body["embedder_circuit"] == "open"


def test_a_closed_port_opens_the_circuit(client, api, settings):
    # given an embedder URL on a local port nothing listens on
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings.HAKI_EMBED_PROVIDER = "openai"
    settings.HAKI_EMBED_URL = f"http://127.0.0.1:{port}/v1/embeddings"
    settings.HAKI_EMBED_BREAKER_FAILURES = 3
    # when three writes fail
    assert [error_code(_write(api)) for _ in range(3)] == ["embedder_unavailable"] * 3
    # then readiness reports the open circuit, and writes say so
    body = client.get("/v1/health/ready").json()
    assert body["embedder_status"] == "unavailable" and body["embedder_circuit"] == "open"
    assert _write(api).json()["error"]["details"] == {"circuit": "open"}


def test_half_open_lets_one_trial_through_and_a_failed_trial_opens_again():
    # given a breaker opened by two failures, on a clock the test moves
    now = [0.0]
    breaker = CircuitBreaker(failures=2, cooldown=10, clock=lambda: now[0])
    breaker.failed()
    breaker.before_call("x")  # one failure: still closed
    breaker.failed()
    with pytest.raises(EmbedderCircuitOpen) as refused:
        breaker.before_call("x")
    assert refused.value.retry_after == 10
    # when the cool-down has passed: one trial goes through, a second caller meanwhile is refused
    now[0] = 10.0
    breaker.before_call("x")
    with pytest.raises(EmbedderCircuitOpen):
        breaker.before_call("x")
    # then a failed trial opens the circuit for a whole new cool-down
    breaker.failed()
    now[0] = 15.0
    assert breaker.state == "open"
    now[0] = 20.0
    breaker.before_call("x")
    breaker.succeeded()
    assert breaker.state == "closed"
