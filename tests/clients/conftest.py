import pytest

from hakimem.services import api_key_create
from tests.conftest import OTHER_PROJECT, PROJECT


@pytest.fixture
def api_key(transactional_db) -> str:
    """A committed key for PROJECT: the live server's thread and subprocesses read it on their own connections."""
    _, raw = api_key_create(project_id=PROJECT, label="client-test")
    return raw


@pytest.fixture
def other_key(transactional_db) -> str:
    _, raw = api_key_create(project_id=OTHER_PROJECT, label="client-test")
    return raw
