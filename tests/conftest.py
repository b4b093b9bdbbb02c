import pytest
from rest_framework.test import APIClient

from hakimem.embeddings import get_embedder
from hakimem.services import api_key_create

PROJECT = "proj-a"
OTHER_PROJECT = "proj-b"


@pytest.fixture(autouse=True)
def hashing_embedder(settings):
    """The suite runs on the deterministic hashing embedder; tests marked `minilm` switch to the real model."""
    settings.HAKI_EMBED_PROVIDER = "hashing"
    settings.HAKI_CONFLICT_POLICY = "curator"
    settings.HAKI_RECALL_MAX_DISTANCE = 0.0
    yield


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
def embed():
    def _embed(text: str):
        return get_embedder().embed([text])[0]

    return _embed


def error_code(response) -> str:
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"code", "message", "details"}, body
    return body["error"]["code"]
