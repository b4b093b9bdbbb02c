"""Conflict sets through the API: a contradiction opens one, a later one joins it, a batch is checked against
itself; /v1/conflicts resolves (keep one, dismiss) or refuses; the newest-wins policy supersedes at once."""

import pytest
from django.db import transaction
from django.utils import timezone

from facts.conflicts import conflict_record
from facts.models import ConflictSet, Fact
from tests.conftest import PROJECT, error_code
from tests.facts.calls import PAUL_IN_BORDEAUX, PAUL_IN_LILLE, PAUL_IN_NANTES, fact, post_fact
from tests.facts.factories import FactFactory

pytestmark = pytest.mark.django_db


def test_contradiction_opens_a_conflict_set(api):
    nantes = post_fact(api, PAUL_IN_NANTES)
    bordeaux = post_fact(api, PAUL_IN_BORDEAUX)
    assert bordeaux["deduplicated"] is False and bordeaux["conflict_set_id"]
    listed = api.get(f"/v1/conflicts?project_id={PROJECT}&subject_id=alice&status=open").json()["conflicts"]
    assert [c["id"] for c in listed] == [bordeaux["conflict_set_id"]]
    assert listed[0]["signal"] == "different_value"
    assert listed[0]["reading"]["attribute"] == "residence" and len(listed[0]["reading"]["values"]) == 2
    detail = api.get(f"/v1/conflicts/{bordeaux['conflict_set_id']}").json()
    members = {m["fact_id"]: m for m in detail["members"]}
    assert set(members) == {nantes["id"], bordeaux["id"]}
    assert members[nantes["id"]]["similarity_to"][bordeaux["id"]] >= 0.75
    assert all(f.status == "active" for f in Fact.objects.all())


def test_a_third_contradiction_joins_the_open_set(api):
    post_fact(api, PAUL_IN_NANTES)
    set_id = post_fact(api, PAUL_IN_BORDEAUX)["conflict_set_id"]
    lille = post_fact(api, PAUL_IN_LILLE)
    assert lille["conflict_set_id"] == set_id
    assert ConflictSet.objects.count() == 1
    assert ConflictSet.objects.get().members.count() == 3


def test_a_batch_is_checked_against_itself_within_each_scope(api):
    # given one batch: a fact, one contradicting it, a repeat of the second, and the second in another subject
    body = {
        "facts": [
            fact(PAUL_IN_NANTES),
            fact(PAUL_IN_BORDEAUX),
            fact(PAUL_IN_BORDEAUX.upper()),
            fact(PAUL_IN_BORDEAUX, subject="bob"),
        ]
    }
    # when
    response = api.post("/v1/facts", body, format="json")
    # then the second opens a set with the first; the repeat answers with the second and reports its set
    assert response.status_code == 201
    nantes, bordeaux, repeat, other_subject = response.json()["facts"]
    assert nantes["conflict_set_id"] is None and not nantes["deduplicated"]
    assert bordeaux["conflict_set_id"] and not bordeaux["deduplicated"]
    assert (
        repeat["deduplicated"]
        and repeat["id"] == bordeaux["id"]
        and repeat["conflict_set_id"] == bordeaux["conflict_set_id"]
    )
    assert set(ConflictSet.objects.get().members.values_list("fact_id", flat=True)) == {
        Fact.objects.get(text=PAUL_IN_NANTES).id,
        Fact.objects.get(text=PAUL_IN_BORDEAUX, subject_id="alice").id,
    }
    # and the other subject's fact was compared with nothing of alice's
    assert not other_subject["deduplicated"] and other_subject["conflict_set_id"] is None


def test_a_fact_contradicting_members_of_two_open_sets_joins_both_and_merges_neither(db):
    """Pairwise membership: a set holds facts that each contradict one of its members. A fact that
    contradicts one member of each of two sets joins both; the two sets' other members, which contradict
    nothing of each other, stay apart."""
    from facts.text import Signal

    a, b, c, d, bridge, loose = (FactFactory(text=f"Paul fact {n}.") for n in "abcdef")
    now = timezone.now()
    signal = Signal("different_name", "test")
    # Each in the write's transaction, as facts.writes calls it (a committed test has none around it).
    with transaction.atomic():
        first = conflict_record(b, [(a.id, 0.9, signal)], actor="test", policy="curator", now=now)
    with transaction.atomic():
        second = conflict_record(
            d, [(c.id, 0.9, signal)], actor="test", policy="curator", now=now + timezone.timedelta(seconds=1)
        )
    assert first.id != second.id
    with transaction.atomic():
        joined = conflict_record(
            bridge,
            [(a.id, 0.9, signal), (c.id, 0.9, signal), (loose.id, 0.8, signal)],
            actor="test",
            policy="curator",
            now=now + timezone.timedelta(seconds=2),
        )
    assert joined.id == first.id  # the oldest set is the one the write reports
    assert ConflictSet.objects.filter(status="open").count() == 2
    assert set(first.members.values_list("fact_id", flat=True)) == {a.id, b.id, bridge.id, loose.id}
    assert set(second.members.values_list("fact_id", flat=True)) == {c.id, d.id, bridge.id}


def test_resolve_by_keeping_one(api):
    nantes = post_fact(api, PAUL_IN_NANTES)
    bordeaux = post_fact(api, PAUL_IN_BORDEAUX)
    set_id = bordeaux["conflict_set_id"]
    response = api.post(
        f"/v1/conflicts/{set_id}/resolve", {"keep": [bordeaux["id"]], "note": "moved in May"}, format="json"
    )
    assert response.status_code == 200
    body = response.json()
    assert (
        body["status"] == "resolved" and body["note"] == "moved in May" and body["resolved_by"].startswith("api_key:")
    )
    old = Fact.objects.get(id=nantes["id"])
    assert old.status == "superseded" and str(old.superseded_by_id) == bordeaux["id"] and old.recorded_to
    assert {m["fact_id"]: m["kept"] for m in body["members"]} == {nantes["id"]: False, bordeaux["id"]: True}
    again = api.post(f"/v1/conflicts/{set_id}/resolve", {"dismiss": True}, format="json")
    assert again.status_code == 409 and error_code(again) == "conflict_not_open"


def test_dismiss_keeps_every_member_active(api):
    post_fact(api, PAUL_IN_NANTES)
    set_id = post_fact(api, PAUL_IN_BORDEAUX)["conflict_set_id"]
    body = api.post(f"/v1/conflicts/{set_id}/resolve", {"dismiss": True, "note": "two homes"}, format="json").json()
    assert body["status"] == "dismissed"
    assert set(Fact.objects.values_list("status", flat=True)) == {"active"}


@pytest.mark.parametrize(
    "payload",
    [
        {},
        {"keep": [], "note": "x"},
        {"keep": ["00000000-0000-4000-8000-000000000000"]},
        {"dismiss": True, "keep": ["00000000-0000-4000-8000-000000000000"]},
    ],
)
def test_resolve_needs_one_valid_decision(api, payload):
    post_fact(api, PAUL_IN_NANTES)
    set_id = post_fact(api, PAUL_IN_BORDEAUX)["conflict_set_id"]
    response = api.post(f"/v1/conflicts/{set_id}/resolve", payload, format="json")
    assert response.status_code == 400 and error_code(response) == "invalid_request"
    assert ConflictSet.objects.get().status == "open"


def test_unknown_conflict_is_404(api):
    response = api.get("/v1/conflicts/00000000-0000-4000-8000-000000000000")
    assert response.status_code == 404 and error_code(response) == "not_found"


def test_newest_wins_policy_supersedes_at_once(api, settings):
    settings.HAKI_CONFLICT_POLICY = "newest_wins"
    nantes = post_fact(api, PAUL_IN_NANTES)
    bordeaux = post_fact(api, PAUL_IN_BORDEAUX)
    conflict = ConflictSet.objects.get(id=bordeaux["conflict_set_id"])
    assert conflict.status == "resolved" and conflict.resolved_by == "system:newest_wins"
    old = Fact.objects.get(id=nantes["id"])
    assert old.status == "superseded" and str(old.superseded_by_id) == bordeaux["id"]
