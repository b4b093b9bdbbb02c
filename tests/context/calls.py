"""A context call from a test (POST /v1/context through the API client, its status checked) and its trace's
decisions, by fact or episode id."""

from tests.conftest import PROJECT
from traces.models import Decision


def ask(api, query, budget=None, subject="alice", expect=200):
    payload = {"project_id": PROJECT, "subject_id": subject, "query": query}
    if budget is not None:
        payload["budget_tokens"] = budget
    response = api.post("/v1/context", payload, format="json")
    assert response.status_code == expect, response.content
    return response.json()


def decisions(packet):
    return {(str(d.fact_id or d.event_id)): d for d in Decision.objects.filter(trace_id=packet["trace_id"])}
