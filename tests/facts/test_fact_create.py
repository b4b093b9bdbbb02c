"""POST /v1/facts: one fact or a batch, all or nothing, each bad item named with its field, the batch's limits, a
source event of the same scope, and a fixed number of queries whatever the batch."""

import pytest

from facts.models import Fact
from tests.conftest import PROJECT, REQUEST_OVERHEAD_QUERIES, error_code
from tests.facts.calls import fact, post_fact
from tests.facts.factories import EventFactory, FactFactory

pytestmark = pytest.mark.django_db


def test_create_one_fact(api):
    body = post_fact(
        api,
        "Alice is allergic to peanuts.",
        category="health",
        kind="fact",
        importance=0.9,
        volatility="stable",
        valid_from="2024-01-01T00:00:00+02:00",
        metadata={"source": "chat"},
    )
    assert body["deduplicated"] is False and body["conflict_set_id"] is None
    assert body["status"] == "active" and body["category"] == "health" and body["importance"] == 0.9
    assert body["valid_from"] == "2023-12-31T22:00:00Z"  # stored and answered in UTC
    assert body["recorded_from"].endswith("Z") and body["recorded_to"] is None
    stored = Fact.objects.get(id=body["id"])
    assert stored.metadata == {"source": "chat"} and stored.last_confirmed_at == stored.recorded_from


def test_create_a_batch(api):
    response = api.post(
        "/v1/facts", {"facts": [fact("Alice plays the cello."), fact("Alice speaks Portuguese.")]}, format="json"
    )
    assert response.status_code == 201
    assert [f["text"] for f in response.json()["facts"]] == ["Alice plays the cello.", "Alice speaks Portuguese."]
    assert Fact.objects.count() == 2


def test_batch_is_all_or_nothing_and_names_each_bad_item(api):
    items = [
        fact("Alice plays the cello."),
        fact("   "),
        fact("Alice was born in Porto.", valid_from="2020-01-01T00:00:00"),
        fact("Alice likes jazz.", importance="high"),
        {"project_id": PROJECT, "subject_id": "bad subject!", "text": "x"},
    ]
    response = api.post("/v1/facts", {"facts": items}, format="json")
    assert response.status_code == 400
    assert error_code(response) == "invalid_request"
    errors = {(e["index"], e["field"]) for e in response.json()["error"]["details"]["errors"]}
    assert errors == {(1, "text"), (2, "valid_from"), (3, "importance"), (4, "subject_id")}
    assert Fact.objects.count() == 0


@pytest.mark.parametrize(
    "payload, field",
    [
        (fact("x", valid_from="2024-02-01T00:00:00Z", valid_to="2024-01-01T00:00:00Z"), "valid_to"),
        (fact("x", metadata=["a"]), "metadata"),
        (fact("x", kind="opinion"), "kind"),
        (fact("x", importance=True), "importance"),
        (fact("x", importance=1.5), "importance"),
        (fact("x" * 8001), "text"),
        (fact(42), "text"),
        (fact("x", colour="blue"), "colour"),
        ({"subject_id": "alice", "text": "x"}, "project_id"),
    ],
)
def test_invalid_fact_is_refused_with_its_field(api, payload, field):
    response = api.post("/v1/facts", payload, format="json")
    assert response.status_code == 400
    assert error_code(response) == "invalid_request"
    assert field in {e["field"] for e in response.json()["error"]["details"]["errors"]}
    assert Fact.objects.count() == 0


def test_batch_size_limits(api):
    assert api.post("/v1/facts", {"facts": []}, format="json").status_code == 400
    response = api.post("/v1/facts", {"facts": [fact(f"Fact {i}.") for i in range(501)]}, format="json")
    assert response.status_code == 400 and error_code(response) == "invalid_request"


def test_source_event_must_be_in_the_same_scope(api):
    own = EventFactory(subject_id="alice")
    foreign = EventFactory(subject_id="bob")
    ok = post_fact(api, "Alice moved to Porto after the wedding.", source_event_id=str(own.id))
    assert ok["source_event_id"] == str(own.id)
    response = api.post(
        "/v1/facts",
        {"facts": [fact("Alice sold her car."), fact("Alice bought a boat.", source_event_id=str(foreign.id))]},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["error"]["details"]["errors"] == [
        {"index": 1, "field": "source_event_id", "message": "no event with this id in the fact's scope"}
    ]
    assert Fact.objects.count() == 1


@pytest.mark.parametrize("batch", [1, 20])
def test_storing_facts_is_a_fixed_number_of_queries_whatever_the_batch(api, django_assert_num_queries, batch):
    FactFactory.create_batch(5)
    # facts unlike each other and the stored ones: no duplicate, no conflict (each of those costs its own writes)
    items = [fact(" ".join(f"word{n}x{k}" for k in range(3)) + ".") for n in range(batch)]
    # a savepoint, the scope's lock, the project's settings, the same-text lookup, two SET LOCALs and the neighbours
    # of the whole batch, one INSERT, the savepoint's release
    with django_assert_num_queries(9 + REQUEST_OVERHEAD_QUERIES):
        response = api.post("/v1/facts", {"facts": items}, format="json")
    assert response.status_code == 201
    assert not any(f["deduplicated"] or f["conflict_set_id"] for f in response.json()["facts"])
