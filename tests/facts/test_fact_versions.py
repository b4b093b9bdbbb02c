"""PATCH /v1/facts/{id} and a fact's history: a new text makes a new version, other fields change in place, what
cannot change is refused, a retracted fact takes nothing more; the history is one query and goes back through
every superseded version."""

from datetime import timedelta

import pytest
from django.utils import timezone

from facts.models import Fact
from tests.conftest import REQUEST_OVERHEAD_QUERIES, error_code
from tests.facts.calls import post_fact
from tests.facts.factories import FactFactory

pytestmark = pytest.mark.django_db


def test_patch_text_creates_a_new_version(api):
    v1 = post_fact(api, "Alice works at the bakery.", category="work", importance=0.7)
    response = api.patch(f"/v1/facts/{v1['id']}", {"text": "Alice works at the town library."}, format="json")
    assert response.status_code == 200
    v2 = response.json()
    assert v2["id"] != v1["id"] and v2["category"] == "work" and v2["importance"] == 0.7
    old = api.get(f"/v1/facts/{v1['id']}").json()
    assert old["status"] == "superseded" and old["superseded_by"] == v2["id"] and old["recorded_to"]
    history = api.get(f"/v1/facts/{v1['id']}/history").json()["versions"]
    assert [v["id"] for v in history] == [v1["id"], v2["id"]]
    assert [v["id"] for v in api.get(f"/v1/facts/{v2['id']}/history").json()["versions"]] == [v1["id"], v2["id"]]


def test_patch_other_fields_edits_in_place(api):
    v1 = post_fact(api, "Alice works at the bakery.")
    body = api.patch(
        f"/v1/facts/{v1['id']}",
        {"importance": 0.2, "metadata": {"k": 1}, "valid_to": "2030-01-01T00:00:00Z"},
        format="json",
    ).json()
    assert body["id"] == v1["id"] and body["importance"] == 0.2 and body["metadata"] == {"k": 1}
    assert body["valid_to"] == "2030-01-01T00:00:00Z"
    assert Fact.objects.count() == 1


@pytest.mark.parametrize(
    "payload", [{}, {"project_id": "other"}, {"kind": "preference"}, {"importance": "0.3"}, {"valid_to": "2030-01-01"}]
)
def test_patch_refuses_what_cannot_change(api, payload):
    v1 = post_fact(api, "Alice works at the bakery.")
    response = api.patch(f"/v1/facts/{v1['id']}", payload, format="json")
    assert response.status_code == 400 and error_code(response) == "invalid_request"


def test_retract_then_nothing_more(api):
    v1 = post_fact(api, "Alice works at the bakery.")
    body = api.delete(f"/v1/facts/{v1['id']}").json()
    assert body["status"] == "retracted" and body["recorded_to"]
    assert api.delete(f"/v1/facts/{v1['id']}").json()["recorded_to"] == body["recorded_to"]  # idempotent
    response = api.patch(f"/v1/facts/{v1['id']}", {"text": "Alice works nowhere."}, format="json")
    assert response.status_code == 409 and error_code(response) == "fact_not_active"


def test_unknown_fact_is_404(api):
    response = api.get("/v1/facts/00000000-0000-4000-8000-000000000000")
    assert response.status_code == 404 and error_code(response) == "not_found"


def _version_chain(length: int) -> list[Fact]:
    """`length` versions of one fact, oldest first, each superseded by the next."""
    now = timezone.now()
    chain = [FactFactory(text=f"Alice lives at address number {length}.", recorded_from=now)]
    for i in range(length - 1, 0, -1):
        chain.insert(
            0,
            FactFactory(
                text=f"Alice lives at address number {i}.",
                status="superseded",
                superseded_by=chain[0],
                recorded_from=now - timedelta(days=length - i),
                recorded_to=now - timedelta(days=length - i - 1),
            ),
        )
    return chain


@pytest.mark.parametrize("length", [1, 6])
def test_history_is_one_query_whatever_its_length(api, django_assert_num_queries, length):
    chain = _version_chain(length)
    with django_assert_num_queries(2 + REQUEST_OVERHEAD_QUERIES):  # the fact, its chain
        response = api.get(f"/v1/facts/{chain[length // 2].id}/history")
    assert [v["id"] for v in response.json()["versions"]] == [str(f.id) for f in chain]


def test_history_goes_back_through_the_first_recorded_of_several_superseded_facts(api):
    # given a conflict resolved by keeping the newest of three facts: the two others are superseded by it
    now = timezone.now()
    kept = FactFactory(text="Paul lives in Lille.", recorded_from=now)
    older, newer = (
        FactFactory(
            text=text,
            status="superseded",
            superseded_by=kept,
            recorded_from=now - timedelta(days=days),
            recorded_to=now,
        )
        for text, days in (("Paul lives in Nantes.", 2), ("Paul lives in Bordeaux.", 1))
    )
    # when / then
    assert [v["id"] for v in api.get(f"/v1/facts/{kept.id}/history").json()["versions"]] == [
        str(older.id),
        str(kept.id),
    ]
    assert [v["id"] for v in api.get(f"/v1/facts/{newer.id}/history").json()["versions"]] == [
        str(newer.id),
        str(kept.id),
    ]
