"""POST and GET /v1/events: created, paged by occurrence, an aware date required."""

import pytest

from facts.models import Event
from tests.conftest import PROJECT, error_code

pytestmark = pytest.mark.django_db


def test_events_create_and_page_by_occurrence(api):
    body = {
        "events": [
            {
                "project_id": PROJECT,
                "subject_id": "alice",
                "text": f"Event {i}.",
                "occurred_at": f"2026-0{i + 1}-01T10:00:00Z",
            }
            for i in range(5)
        ]
    }
    assert api.post("/v1/events", body, format="json").status_code == 201
    first = api.get(f"/v1/events?project_id={PROJECT}&subject_id=alice&limit=2").json()
    assert [e["text"] for e in first["events"]] == ["Event 4.", "Event 3."]
    second = api.get(f"/v1/events?project_id={PROJECT}&subject_id=alice&limit=2&cursor={first['next_cursor']}").json()
    assert [e["text"] for e in second["events"]] == ["Event 2.", "Event 1."]


def test_event_needs_an_aware_date(api):
    response = api.post(
        "/v1/events",
        {"project_id": PROJECT, "subject_id": "alice", "text": "Party.", "occurred_at": "2026-01-01 10:00"},
        format="json",
    )
    assert response.status_code == 400 and error_code(response) == "invalid_request"
    assert Event.objects.count() == 0
