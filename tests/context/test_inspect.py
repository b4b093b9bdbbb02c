"""GET /v1/inspect/{trace_id}: the request, the packet, the timings and every decision, for the key's project only."""

import pytest

from tests.conftest import PROJECT, error_code
from tests.context.calls import ask
from tests.facts.factories import FactFactory

pytestmark = pytest.mark.django_db


def test_inspect_shows_request_packet_timings_and_decisions(api):
    for i in range(4):
        FactFactory(text=f"Alice grows tomato variety {i}.")
    packet = ask(api, "tomato", budget=20)
    body = api.get(f"/v1/inspect/{packet['trace_id']}").json()
    assert body["request"] == {"project_id": PROJECT, "subject_id": "alice", "query": "tomato", "budget_tokens": 20}
    assert body["packet"]["used_tokens"] == packet["used_tokens"] and body["packet"]["rendered"] == packet["rendered"]
    assert {"embed", "retrieve", "rank", "pack", "multi_hop"} <= set(body["timings_ms"])
    ranks = [d["rank"] for d in body["decisions"]]
    assert ranks == sorted(ranks) and len(ranks) == 4
    assert set(body["decisions"][0]["score_parts"]) == {"similarity", "cosine_distance", "text_rank", "recency"}


def test_inspect_is_scoped_to_the_keys_project(api, other_api):
    packet = ask(api, "anything")
    response = other_api.get(f"/v1/inspect/{packet['trace_id']}")
    assert response.status_code == 404 and error_code(response) == "not_found"
