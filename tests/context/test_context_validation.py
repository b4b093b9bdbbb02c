"""POST /v1/context refuses a malformed request with its error code, and answers any text safely."""

import pytest

from tests.conftest import PROJECT, error_code
from tests.context.calls import ask
from tests.facts.factories import FactFactory
from traces.models import Trace

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("budget", ["900", 900.0, 12.5, True, False, 0, -5, 32001, None, [900]])
def test_budget_must_be_a_positive_integer_within_the_cap(api, budget):
    response = api.post(
        "/v1/context",
        {"project_id": PROJECT, "subject_id": "alice", "query": "hi", "budget_tokens": budget},
        format="json",
    )
    assert response.status_code == 400
    assert error_code(response) == "budget_exceeded"
    assert Trace.objects.count() == 0


def test_budget_cap_follows_the_setting(api, settings):
    settings.HAKI_MAX_BUDGET_TOKENS = 100
    assert ask(api, "hi", budget=100)["budget_tokens"] == 100
    response = api.post(
        "/v1/context",
        {"project_id": PROJECT, "subject_id": "alice", "query": "hi", "budget_tokens": 101},
        format="json",
    )
    assert error_code(response) == "budget_exceeded"


def test_budget_defaults_to_900(api):
    assert ask(api, "anything")["budget_tokens"] == 900


@pytest.mark.parametrize("query", ["", "   ", "x" * 4001, 42, None])
def test_query_must_be_text_of_1_to_4000_chars(api, query):
    response = api.post("/v1/context", {"project_id": PROJECT, "subject_id": "alice", "query": query}, format="json")
    assert response.status_code == 400 and error_code(response) == "invalid_request"
    assert Trace.objects.count() == 0


def test_arbitrary_user_text_is_safe(api):
    FactFactory(text="Alice's password manager is Bitwarden.")
    packet = ask(api, "'); DROP TABLE facts_fact; -- & | ! <-> :* \"unterminated (((")
    assert packet["status"] == "ok"
