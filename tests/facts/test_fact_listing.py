"""GET /v1/facts: keyset pages without duplicates or gaps under concurrent inserts, filters, bad parameters
refused, two queries whatever the scope holds."""

import pytest
from django.utils import timezone

from tests.conftest import PROJECT, REQUEST_OVERHEAD_QUERIES, error_code
from tests.facts.calls import list_facts
from tests.facts.factories import FactFactory

pytestmark = pytest.mark.django_db


def test_keyset_pages_have_no_duplicates_or_gaps_under_concurrent_inserts(api):
    originals = {FactFactory(text=f"Alice note {i}.").id for i in range(7)}
    seen = []
    page = list_facts(api, limit=3)
    while True:
        seen += [f["id"] for f in page["facts"]]
        FactFactory(text=f"Alice wrote something new {len(seen)}.")  # lands before the cursor: never on a later page
        if not page["next_cursor"]:
            break
        page = list_facts(api, limit=3, cursor=page["next_cursor"])
    assert len(seen) == len(set(seen)) == 7
    assert {str(i) for i in originals} == set(seen)


def test_list_filters(api):
    FactFactory(text="A health note.", category="health")
    FactFactory(text="A work note.", category="work", kind="preference")
    FactFactory(text="Old note.", status="retracted", recorded_to=timezone.now())
    assert [f["text"] for f in list_facts(api, category="health")["facts"]] == ["A health note."]
    assert [f["text"] for f in list_facts(api, kind="preference")["facts"]] == ["A work note."]
    assert [f["text"] for f in list_facts(api, status="retracted")["facts"]] == ["Old note."]
    assert len(list_facts(api)["facts"]) == 3
    future = (timezone.now() + timezone.timedelta(days=1)).isoformat().replace("+00:00", "Z")
    assert list_facts(api, recorded_after=future)["facts"] == []


@pytest.mark.parametrize(
    "params",
    [
        {"limit": 0},
        {"limit": 201},
        {"cursor": "garbage"},
        {"status": "lost"},
        {"recorded_after": "2024-01-01T00:00:00"},
    ],
)
def test_list_refuses_bad_parameters(api, params):
    query = "&".join(f"{k}={v}" for k, v in {"project_id": PROJECT, "subject_id": "alice", **params}.items())
    response = api.get(f"/v1/facts?{query}")
    assert response.status_code == 400 and error_code(response) == "invalid_request"


@pytest.mark.parametrize("stored", [3, 60])
def test_listing_facts_is_two_queries_whatever_the_scope_holds(api, django_assert_num_queries, stored):
    FactFactory.create_batch(stored)
    with django_assert_num_queries(1 + REQUEST_OVERHEAD_QUERIES):  # the page
        body = list_facts(api)
    assert len(body["facts"]) == min(stored, 50)
