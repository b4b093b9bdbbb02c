"""Liveness and readiness: /v1/health/live answers while the process runs, /v1/health/ready only when a
context call could be served (database with the vector extension, embedder making vectors of the right size).
/v1/health keeps its answer for older clients."""

import pytest
from django.db import OperationalError
from django.db.backends.utils import CursorWrapper


@pytest.fixture
def database_down(monkeypatch):
    def refuse(self, *args, **kwargs):
        raise OperationalError("connection refused")

    monkeypatch.setattr(CursorWrapper, "execute", refuse)


@pytest.fixture
def embedder_down(settings):
    # nothing listens on the discard port: the openai embedder cannot answer
    settings.HAKI_EMBED_PROVIDER = "openai"
    settings.HAKI_EMBED_URL = "http://127.0.0.1:9/v1/embeddings"
    settings.HAKI_EMBED_TIMEOUT = 1.0


@pytest.mark.django_db
def test_liveness_answers_without_a_key_and_without_the_database(client, django_assert_num_queries):
    with django_assert_num_queries(0):
        response = client.get("/v1/health/live")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


@pytest.mark.django_db
def test_liveness_answers_while_the_database_is_down(client, database_down):
    assert client.get("/v1/health/live").status_code == 200


@pytest.mark.django_db
def test_readiness_checks_the_database_and_the_embedder(client):
    response = client.get("/v1/health/ready")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ready" and body["database"] == "ok" and body["embedder_status"] == "ok"
    assert body["vector_extension"].startswith("0.8") and body["embedder"] == "hashing" and body["embed_dim"] == 384


@pytest.mark.django_db
def test_not_ready_while_the_database_is_down(client, database_down):
    response = client.get("/v1/health/ready")
    assert response.status_code == 503
    assert response.json()["status"] == "not_ready" and response.json()["database"] == "unreachable"
    # the old endpoint says the same, in its own words
    assert client.get("/v1/health").status_code == 503


@pytest.mark.django_db
def test_not_ready_while_the_embedder_is_down(client, embedder_down):
    response = client.get("/v1/health/ready")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "not_ready" and body["embedder"] == "openai" and body["embedder_status"] == "unavailable"
    assert body["database"] == "ok"
    # /v1/health never looked at the embedder: older clients see no change
    assert client.get("/v1/health").json()["status"] == "ok"
