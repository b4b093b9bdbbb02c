"""POST /v1/context packs by score under the budget and gives every candidate one decision with its reason code:
included, over budget, blocked by an open conflict or an expired volatility; hard filters keep the rest out."""

import pytest
from django.utils import timezone

from facts.models import ConflictSet
from tests.conftest import PROJECT
from tests.context.calls import ask, decisions
from tests.facts.factories import EventFactory, FactFactory
from traces.models import Decision, Trace

pytestmark = pytest.mark.django_db


def test_packet_items_carry_their_metadata(api):
    FactFactory(text="Alice is allergic to peanuts.", metadata={"source": "intake form"}, category="health")
    EventFactory(text="Alice had a reaction at the bakery.", metadata={"severity": 2})
    packet = ask(api, "peanut allergy")
    assert packet["facts"][0]["metadata"] == {"source": "intake form"} and packet["facts"][0]["category"] == "health"
    assert packet["episodes"][0]["metadata"] == {"severity": 2}


def test_included_and_over_budget(api):
    for i in range(6):
        FactFactory(text=f"Alice collects vintage stamps from country number {i}.")
    packet = ask(api, "Which stamps does Alice collect?", budget=30)
    assert packet["used_tokens"] <= 30 and packet["facts"]
    rows = decisions(packet)
    served = {f["id"] for f in packet["facts"]}
    assert {k for k, d in rows.items() if d.reason_code == "included"} == served
    assert {d.reason_code for k, d in rows.items() if k not in served} == {"over_budget"}
    assert all(d.decision == "excluded" for k, d in rows.items() if k not in served)
    scores = [f["score"] for f in packet["facts"]]
    assert scores == sorted(scores, reverse=True)


def test_every_candidate_has_exactly_one_decision(api):
    for i in range(10):
        FactFactory(text=f"Alice visited museum number {i} in Vienna.")
    EventFactory(text="Alice flew to Vienna.")
    packet = ask(api, "museum Vienna", budget=40)
    trace = Trace.objects.get(id=packet["trace_id"])
    fact_rows = Decision.objects.filter(trace=trace, item_type="fact")
    assert fact_rows.count() == 10 and trace.candidates == 11  # facts and episodes are one ranking
    assert fact_rows.values("fact_id").distinct().count() == 10
    assert Decision.objects.filter(trace=trace, item_type="episode").count() == 1
    assert sorted(Decision.objects.filter(trace=trace).values_list("rank", flat=True)) == list(range(1, 12))


def test_hard_filters_keep_invalid_facts_out_entirely(api):
    now = timezone.now()
    FactFactory(text="Alice lives in Porto.", valid_to=now - timezone.timedelta(days=1))
    FactFactory(text="Alice lives in Faro.", status="retracted", recorded_to=now)
    kept = FactFactory(text="Alice lives in Braga.")
    FactFactory(text="Alice lives in Evora.", status="superseded", recorded_to=now, superseded_by=kept)
    FactFactory(text="Alice lives in Lisbon.", subject_id="bob")
    packet = ask(api, "Where does Alice live?")
    assert [f["text"] for f in packet["facts"]] == ["Alice lives in Braga."]
    assert set(decisions(packet)) == {str(kept.id)}  # the others were never even candidates


def test_open_conflict_blocks_then_resolution_serves(api):
    a = api.post(
        "/v1/facts",
        {
            "project_id": PROJECT,
            "subject_id": "alice",
            "text": "Paul lives in Nantes with his wife and their two children.",
        },
        format="json",
    ).json()
    b = api.post(
        "/v1/facts",
        {
            "project_id": PROJECT,
            "subject_id": "alice",
            "text": "Paul lives in Bordeaux with his wife and their two children.",
        },
        format="json",
    ).json()
    packet = ask(api, "Where does Paul live?")
    assert packet["facts"] == [] and packet["status"] == "degraded"
    assert "open_conflict: 2 fact(s) hidden pending conflict resolution" in packet["warnings"]
    assert {d.reason_code for d in decisions(packet).values()} == {"conflict_open"}
    assert {d.decision for d in decisions(packet).values()} == {"blocked"}
    api.post(f"/v1/conflicts/{b['conflict_set_id']}/resolve", {"keep": [b["id"]]}, format="json")
    packet = ask(api, "Where does Paul live?")
    assert [f["id"] for f in packet["facts"]] == [b["id"]] and packet["status"] == "ok"
    assert a["id"] not in decisions(packet)
    assert ConflictSet.objects.get().status == "resolved"


def test_expired_volatility_is_blocked_but_still_listed(api, settings):
    long_ago = timezone.now() - timezone.timedelta(days=8)
    stale = FactFactory(
        text="Alice is travelling in Peru.", volatility="volatile", recorded_from=long_ago, last_confirmed_at=long_ago
    )
    fresh = FactFactory(text="Alice is learning Quechua.", volatility="volatile")
    forever = FactFactory(text="Alice was born in Peru.", recorded_from=long_ago, last_confirmed_at=long_ago)
    packet = ask(api, "Alice Peru")
    assert {f["id"] for f in packet["facts"]} == {str(fresh.id), str(forever.id)}
    assert decisions(packet)[str(stale.id)].reason_code == "volatility_expired"
    assert "volatility_expired: 1 fact(s) hidden as stale" in packet["warnings"]
    listed = api.get(f"/v1/facts?project_id={PROJECT}&subject_id=alice").json()["facts"]
    assert str(stale.id) in {f["id"] for f in listed}


def test_rewriting_a_volatile_fact_reconfirms_it(api):
    long_ago = timezone.now() - timezone.timedelta(days=8)
    stale = FactFactory(
        text="Alice is travelling in Peru.", volatility="volatile", recorded_from=long_ago, last_confirmed_at=long_ago
    )
    api.post(
        "/v1/facts",
        {"project_id": PROJECT, "subject_id": "alice", "text": "Alice is travelling in Peru."},
        format="json",
    )
    assert [f["id"] for f in ask(api, "Alice Peru")["facts"]] == [str(stale.id)]
