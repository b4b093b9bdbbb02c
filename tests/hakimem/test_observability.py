"""/metrics exposes the named series and counts what a context call did; each context call logs one JSON line
with its trace id and nothing of the query or the subject."""

import json
import logging
import uuid

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import PROJECT

PHASES = {"embed", "retrieve", "rank", "pack", "multi_hop", "render", "trace_write"}


METRICS_TOKEN = "metrics-token-of-the-test"


@pytest.fixture(autouse=True)
def metrics_token(settings):
    settings.HAKI_METRICS_TOKEN = METRICS_TOKEN


def samples(client) -> dict[tuple, float]:
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {METRICS_TOKEN}")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/plain")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    }


def delta(before, after, name, **labels) -> float:
    key = (name, tuple(sorted(labels.items())))
    return after.get(key, 0.0) - before.get(key, 0.0)


@pytest.mark.django_db
def test_a_context_call_shows_in_the_metrics(api, client):
    # given a scope with facts
    for text in ["Alice is allergic to peanuts.", "Alice lives in Lyon.", "Alice works as a nurse."]:
        api.post("/v1/facts", {"project_id": PROJECT, "subject_id": "alice", "text": text}, format="json")
    before = samples(client)

    # when one context call is made, with a question no earlier test of this process asked (the query vectors' cache
    # lasts as long as the process, which runs many test files)
    question = f"What is Alice allergic to ({uuid.uuid4().hex[:8]})?"
    response = api.post("/v1/context", {"project_id": PROJECT, "subject_id": "alice", "query": question}, format="json")
    assert response.status_code == 200
    decisions = api.get(f"/v1/inspect/{response.json()['trace_id']}").json()["decisions"]
    after = samples(client)

    # then its request, phases, status, decisions and query embedding are counted, once
    assert (
        delta(
            before,
            after,
            "hakimem_http_request_duration_seconds_count",
            method="POST",
            endpoint="v1/context",
            status="200",
        )
        == 1
    )
    for phase in PHASES:
        assert delta(before, after, "hakimem_context_phase_seconds_count", phase=phase) == 1, phase
    assert delta(before, after, "hakimem_context_calls_total", status=response.json()["status"]) == 1
    by_code: dict[str, int] = {}
    for decision in decisions:
        by_code[decision["reason_code"]] = by_code.get(decision["reason_code"], 0) + 1
    assert by_code.get("included")
    for code, count in by_code.items():
        assert delta(before, after, "hakimem_context_decisions_total", reason_code=code) == count
    assert delta(before, after, "hakimem_embed_query_cache_total", result="miss") == 1
    assert delta(before, after, "hakimem_embed_seconds_count", provider="hashing", kind="query") == 1
    # and the database pool is reported once a request has given its connection back
    assert after[("hakimem_db_pool_max", ())] >= 1
    assert ("hakimem_db_pool_connections", (("state", "available"),)) in after


@pytest.mark.django_db
def test_a_context_call_logs_one_line_with_its_trace_id_and_no_personal_data(api, caplog):
    query = "Where does Zoltan the lighthouse keeper live?"
    api.post(
        "/v1/facts",
        {"project_id": PROJECT, "subject_id": "subject-zoltan", "text": "Zoltan lives in Brest."},
        format="json",
    )
    with caplog.at_level(logging.INFO, logger="hakimem.context"):
        response = api.post(
            "/v1/context", {"project_id": PROJECT, "subject_id": "subject-zoltan", "query": query}, format="json"
        )
    lines = [r.getMessage() for r in caplog.records if r.name == "hakimem.context"]
    assert len(lines) == 1
    line = json.loads(lines[0])
    assert line["event"] == "context_call" and line["trace_id"] == response.json()["trace_id"]
    assert (
        line["project_id"] == PROJECT
        and line["facts_served"] == 1
        and set(line["timings_ms"]) == PHASES - {"trace_write"}
    )
    assert "Zoltan" not in lines[0] and "subject-zoltan" not in lines[0] and "Brest" not in lines[0]
