"""POST /v1/inspect/{trace_id}/replay: a traced call run again, now or as the memory stood then, under overrides."""

import math
import uuid

import pytest
from django.utils import timezone

from hakimem.embeddings import EmbedderUnavailable
from tests.conftest import PROJECT, error_code
from tests.facts.factories import FactFactory
from traces.models import Decision, Trace
from traces.selectors import fact_decision_counts

pytestmark = pytest.mark.django_db


def ask(api, query, budget=None, subject="alice"):
    payload = {"project_id": PROJECT, "subject_id": subject, "query": query}
    if budget is not None:
        payload["budget_tokens"] = budget
    response = api.post("/v1/context", payload, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def replay(api, trace_id, expect=200, **body):
    response = api.post(f"/v1/inspect/{trace_id}/replay", body, format="json")
    assert response.status_code == expect, response.content
    return response.json() if expect == 200 else response


def post_fact(api, text, **fields):
    response = api.post(
        "/v1/facts", {"project_id": PROJECT, "subject_id": "alice", "text": text, **fields}, format="json"
    )
    assert response.status_code == 201, response.content
    return response.json()


def decision_rows(trace_id):
    """Every decision of a trace as stored: what a replay as it was must reproduce exactly."""
    return sorted(
        Decision.objects.filter(trace_id=trace_id).values_list(
            "item_type",
            "fact_id",
            "event_id",
            "decision",
            "reason_code",
            "rank",
            "score",
            "similarity",
            "cosine_distance",
            "text_rank",
            "recency",
            "tokens",
            "entity",
        ),
        key=str,
    )


def served(result, side="now"):
    """Ids served on one side of a replay: kept + gained (now) or kept + lost (then)."""
    packet = result["packet"]
    return {f["id"] for f in packet["facts"]} | {e["id"] for e in packet["episodes"]}


# --- as_of original reproduces the call on a scope that changed since ----------------------------------------


@pytest.fixture
def changed_scope(api):
    """A call on a scope of facts (one later superseded), an open conflict (later resolved) and an episode; then
    the scope changes: a new version, a resolution, a new episode and a new fact."""
    paris = post_fact(api, "Alice lives in Paris near the Luxembourg gardens.")
    post_fact(api, "Alice works as a nurse at the Paris hospital.")
    nantes = post_fact(api, "Alice's brother Paul lives in Nantes with his wife and their two children.")
    bordeaux = post_fact(api, "Alice's brother Paul lives in Bordeaux with his wife and their two children.")
    assert bordeaux["conflict_set_id"]
    api.post(
        "/v1/events",
        {
            "project_id": PROJECT,
            "subject_id": "alice",
            "text": "Alice visited Paul in spring.",
            "occurred_at": "2026-03-01T10:00:00Z",
        },
        format="json",
    )
    for thing in ("roses", "tulips", "ferns", "irises", "daisies", "lilies"):
        post_fact(api, f"Alice keeps {thing} in her garden and gives some to her brother.")
    stale = FactFactory(
        text="Alice's brother Paul is renovating a rented flat this month.",
        volatility="volatile",
        last_confirmed_at=timezone.now() - timezone.timedelta(days=30),
    )
    packet = ask(api, "Where do Alice and her brother Paul live?", budget=300)

    assert (
        api.patch(f"/v1/facts/{paris['id']}", {"text": "Alice lives in Lyon by the river."}, format="json").status_code
        == 200
    )
    assert (
        api.post(
            f"/v1/conflicts/{bordeaux['conflict_set_id']}/resolve", {"keep": [bordeaux["id"]]}, format="json"
        ).status_code
        == 200
    )
    api.post(
        "/v1/events",
        {
            "project_id": PROJECT,
            "subject_id": "alice",
            "text": "Alice and Paul moved house.",
            "occurred_at": timezone.now().isoformat(),
        },
        format="json",
    )
    post_fact(api, "Alice's brother Paul now plays chess in Toulouse.")
    post_fact(api, stale.text, volatility="volatile")  # a repeat: confirms the stale fact again, in place
    stale.refresh_from_db()
    assert stale.last_confirmed_at > timezone.now() - timezone.timedelta(minutes=1)
    return {"packet": packet, "paris": paris, "nantes": nantes, "bordeaux": bordeaux, "stale": stale}


def test_replay_as_it_was_reproduces_every_decision_of_a_scope_that_changed(api, changed_scope):
    # given a call whose scope has changed since (a fact superseded, a conflict resolved, an event and a fact added)
    original = changed_scope["packet"]
    then = decision_rows(original["trace_id"])
    assert {r[4] for r in then} >= {"included", "conflict_open", "volatility_expired"}

    # when it is replayed as the memory stood at the call's time, with no override
    result = replay(api, original["trace_id"], as_of="original")

    # then every decision is the original's: same items, reason codes, ranks, score parts and tokens
    assert decision_rows(result["trace_id"]) == then
    diff = result["diff"]
    assert diff["identical"] and diff["lost"] == [] and diff["gained"] == [] and diff["changed"] == []
    assert (
        result["packet"]["rendered"] == original["rendered"]
        and result["packet"]["used_tokens"] == original["used_tokens"]
    )
    assert result["notes"] == []


def test_replay_now_shows_what_changed_since(api, changed_scope):
    # given the same call and its changed scope
    original = changed_scope["packet"]

    # when it is replayed against the memory now
    diff = replay(api, original["trace_id"])["diff"]

    # then the superseded fact is lost, its new version and the kept side of the resolved conflict are gained
    assert not diff["identical"]
    lost = {item["item_id"]: item for item in diff["lost"]}
    gained = {item["item_id"]: item for item in diff["gained"]}
    assert changed_scope["paris"]["id"] in lost
    assert lost[changed_scope["paris"]["id"]]["then"]["reason_code"] == "included"
    assert lost[changed_scope["paris"]["id"]]["now"] is None  # superseded: no longer even a candidate
    bordeaux = gained[changed_scope["bordeaux"]["id"]]
    assert bordeaux["then"]["reason_code"] == "conflict_open" and bordeaux["now"]["reason_code"] == "included"
    assert set(bordeaux["now"]["score_parts"]) == {"similarity", "cosine_distance", "text_rank", "recency"}
    assert any("Lyon" in item["text"] for item in diff["gained"])
    stale = gained[str(changed_scope["stale"].id)]  # confirmed again since
    assert stale["then"]["reason_code"] == "volatility_expired" and stale["now"]["reason_code"] == "included"


def test_replay_trace_is_marked_and_inspectable(api, changed_scope):
    result = replay(api, changed_scope["packet"]["trace_id"], as_of="original", overrides={"budget_tokens": 50})
    inspected = api.get(f"/v1/inspect/{result['trace_id']}").json()
    assert inspected["replay_of"] == changed_scope["packet"]["trace_id"]
    assert inspected["replay"] == {"as_of": "original", "overrides": {"budget_tokens": 50}}
    assert inspected["request"]["budget_tokens"] == 50
    assert api.get(f"/v1/inspect/{changed_scope['packet']['trace_id']}").json()["replay_of"] is None


# --- each override's effect ----------------------------------------------------------------------------------


@pytest.fixture
def garden(api):
    for plant in ("tomatoes", "courgettes", "basil", "strawberries", "leeks", "pumpkins", "radishes", "beans"):
        post_fact(api, f"Alice grows {plant} in her garden.")
    return ask(api, "What does Alice grow in her garden?", budget=400)


def test_budget_override_loses_items_over_budget(api, garden):
    diff = replay(api, garden["trace_id"], overrides={"budget_tokens": 30})["diff"]
    assert diff["served_now"] < diff["served_then"] and diff["lost"]
    assert {item["now"]["reason_code"] for item in diff["lost"]} == {"over_budget"}
    assert {item["then"]["reason_code"] for item in diff["lost"]} == {"included"}


def test_relevance_floor_override_excludes_far_items(api, garden):
    diff = replay(api, garden["trace_id"], overrides={"max_distance": 0.0001})["diff"]
    assert diff["served_now"] == 0 and len(diff["lost"]) == diff["served_then"] > 0
    assert {item["now"]["reason_code"] for item in diff["lost"]} == {"below_relevance_floor"}


def test_phase_one_width_overrides_shrink_the_candidates(api, garden):
    result = replay(api, garden["trace_id"], overrides={"dense_top_k": 1, "lexical_top_k": 0})
    assert result["packet"]["facts"] and len(result["packet"]["facts"]) == 1
    assert result["diff"]["lost"] and all(item["now"] is None for item in result["diff"]["lost"])


def test_weight_overrides_reorder_by_recency(api):
    # given facts recorded over ten days, the oldest the closest to the query
    now = timezone.now()
    texts = [
        "Alice grows tomatoes in her garden.",
        "Alice bought a bicycle.",
        "Alice paints on sundays.",
        "Alice reads crime novels.",
    ]
    facts = [FactFactory(text=t, recorded_from=now - timezone.timedelta(days=10 - 3 * i)) for i, t in enumerate(texts)]
    packet = ask(api, "What does Alice grow in her garden?")
    # when only recency weighs
    diff = replay(api, packet["trace_id"], overrides={"w_similarity": 0, "w_text_rank": 0, "w_recency": 1})["diff"]
    # then the newest fact moves to rank 1 and the closest one down
    moves = {m["item_id"]: m for m in diff["changed"]}
    assert moves[str(facts[-1].id)]["rank_now"] == 1 and moves[str(facts[-1].id)]["rank_then"] > 1
    assert moves[str(facts[0].id)]["rank_then"] == 1 and moves[str(facts[0].id)]["rank_now"] == len(texts)
    assert moves[str(facts[0].id)]["now"]["score"] == pytest.approx(math.exp(-10 / 30), abs=1e-4)


def test_tau_override_changes_the_recency_part(api):
    old = FactFactory(
        text="Alice grows tomatoes in her garden.", recorded_from=timezone.now() - timezone.timedelta(days=10)
    )
    packet = ask(api, "What does Alice grow?")
    diff = replay(api, packet["trace_id"], overrides={"tau_days": 1})["diff"]
    [change] = [m for m in diff["changed"] if m["item_id"] == str(old.id)]
    assert change["then"]["score_parts"]["recency"] == pytest.approx(math.exp(-10 / 30), abs=1e-4)
    assert change["now"]["score_parts"]["recency"] == pytest.approx(math.exp(-10), abs=1e-4)


def test_multi_hop_share_override(api):
    # given a call where a fact came in by multi-hop, from the name in the fact served first
    post_fact(api, "Alice's sister is Beatrice.")
    beatrice = post_fact(api, "Beatrice lives in Oslo and works as a marine biologist at the university there.")
    for thing in (
        "a kite",
        "a lamp",
        "a vase",
        "a rug",
        "a clock",
        "a map",
        "a mug",
        "a hat",
        "a scarf",
        "a kettle",
        "a drum",
        "a fan",
    ):
        post_fact(api, f"Alice bought {thing} at the flea market.")
    packet = ask(api, "Who is Alice's sister?", budget=100)
    then = Decision.objects.get(trace_id=packet["trace_id"], fact_id=beatrice["id"])
    assert then.reason_code == "multi_hop_expansion", then.reason_code
    # when no budget is held for multi-hop
    diff = replay(api, packet["trace_id"], overrides={"multi_hop_share": 0})["diff"]
    # then it is no longer served by multi-hop
    entries = [m for m in diff["lost"] + diff["changed"] if m["item_id"] == beatrice["id"]]
    assert entries and entries[0]["then"]["reason_code"] == "multi_hop_expansion"
    assert entries[0]["now"]["reason_code"] != "multi_hop_expansion"


# --- validation, scope and refusal ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body,field",
    [
        ({"as_of": "yesterday"}, "as_of"),
        ({"overrides": {"w_similarity": 1.5}}, "overrides.w_similarity"),
        ({"overrides": {"w_recency": -0.1}}, "overrides.w_recency"),
        ({"overrides": {"w_text_rank": "0.3"}}, "overrides.w_text_rank"),
        ({"overrides": {"tau_days": 0}}, "overrides.tau_days"),
        ({"overrides": {"max_distance": 3}}, "overrides.max_distance"),
        ({"overrides": {"dense_top_k": 0}}, "overrides.dense_top_k"),
        ({"overrides": {"dense_top_k": 2000}}, "overrides.dense_top_k"),
        ({"overrides": {"lexical_top_k": 12.0}}, "overrides.lexical_top_k"),
        ({"overrides": {"multi_hop_share": True}}, "overrides.multi_hop_share"),
        ({"overrides": {"weight": 1}}, "overrides.weight"),
        ({"overrides": []}, "overrides"),
        ({"as_of": "now", "extra": 1}, "extra"),
    ],
)
def test_invalid_replay_requests_are_refused_and_write_nothing(api, garden, body, field):
    response = replay(api, garden["trace_id"], expect=400, **body)
    assert error_code(response) == "invalid_request"
    assert field in {e["field"] for e in response.json()["error"]["details"]["errors"]}, response.json()
    assert Trace.objects.count() == 1


@pytest.mark.parametrize("budget", [0, 32001, "90", 90.0])
def test_budget_override_is_checked_as_a_context_call_checks_it(api, garden, budget):
    response = replay(api, garden["trace_id"], expect=400, overrides={"budget_tokens": budget})
    assert error_code(response) == "budget_exceeded"
    assert Trace.objects.count() == 1


def test_as_it_was_needs_the_query_vector(api, garden, monkeypatch):
    # given an embedder that is down: a replay now degrades as a call would, one as it was cannot run
    class Down:
        def embed_query(self, text, *, project_id):
            raise EmbedderUnavailable("down")

    monkeypatch.setattr("context.assembler.get_embedder", lambda: Down())
    response = replay(api, garden["trace_id"], expect=503, as_of="original")
    assert error_code(response) == "embedder_unavailable"
    assert Trace.objects.count() == 1
    assert replay(api, garden["trace_id"])["packet"]["status"] == "degraded"


def test_a_replay_cannot_be_replayed(api, garden):
    again = replay(api, replay(api, garden["trace_id"])["trace_id"], expect=400)
    assert error_code(again) == "invalid_request"


def test_unknown_or_other_projects_trace_is_not_found(api, other_api, garden):
    assert error_code(replay(other_api, garden["trace_id"], expect=404)) == "not_found"
    assert error_code(replay(api, "00000000-0000-0000-0000-000000000000", expect=404)) == "not_found"


def test_replays_are_absent_from_stats(api, garden):
    # given one context call and three replays of it
    calls = len(Decision.objects.filter(trace_id=garden["trace_id"]))
    for overrides in ({}, {"budget_tokens": 30}, {"max_distance": 0.0001}):
        replay(api, garden["trace_id"], overrides=overrides)
    assert Trace.objects.count() == 4
    # when the overview is read
    body = api.get("/v1/stats/overview", {"project_id": PROJECT}).json()
    # then it counts the call alone, its decisions alone
    assert body["context_calls"] == 1
    assert sum(body["decisions_by_reason_code"].values()) == calls
    assert body["mean_used_tokens"] == garden["used_tokens"]
    # and a fact's page counts the one call that served it, not the replays
    served_fact = uuid.UUID(garden["facts"][0]["id"])
    [included, _, _] = fact_decision_counts(fact_ids=[served_fact])[served_fact]
    assert included.total == 1


def test_erasure_removes_replays_and_an_erased_subject_cannot_be_replayed(api, garden):
    replay(api, garden["trace_id"])
    replay(api, garden["trace_id"], as_of="original")
    response = api.delete("/v1/subjects/alice", QUERY_STRING=f"project_id={PROJECT}")
    assert response.status_code == 200
    assert response.json()["deleted"]["traces"] == 3
    assert not Trace.objects.exists() and not Decision.objects.exists()
    assert error_code(replay(api, garden["trace_id"], expect=404)) == "not_found"


# --- the admin's Replay buttons ------------------------------------------------------------------------------


def test_curator_replays_a_trace_from_its_page(api, client, curator, changed_scope):
    # given a curator on the page of a call whose scope changed since
    client.force_login(curator)
    trace_id = changed_scope["packet"]["trace_id"]
    page = client.get(f"/admin/traces/trace/{trace_id}/change/").content.decode()
    assert "Replay against the memory now" in page and "Replay as the memory was" in page

    # when they replay it against the memory now
    html = client.post(f"/admin/traces/trace/{trace_id}/replay/", {"as_of": "now"}).content.decode()

    # then the superseded fact shows as served then and not a candidate now, the resolved conflict's kept fact
    # as blocked then and included now, each in its decision's colour
    lost = html.split("Served then, not now")[1].split("Served now, not then")[0]
    assert "Alice lives in Paris near the Luxembourg gardens." in lost and "not a candidate" in lost
    gained = html.split("Served now, not then")[1].split("Moved or rescored")[0]
    assert "Bordeaux" in gained and '<span class="badge blocked">blocked</span>' in gained
    assert '<span class="badge included">included</span>' in gained

    # and as the memory was, every decision is the same
    html = client.post(f"/admin/traces/trace/{trace_id}/replay/", {"as_of": "original"}).content.decode()
    assert "every decision is the same" in html
    assert Trace.objects.filter(replay_of=trace_id).count() == 2
    assert client.get(f"/admin/traces/trace/{trace_id}/replay/").status_code == 405
    replays = client.get("/admin/traces/trace/", {"kind": "replay"}).content.decode()
    assert replays.count("(replay)") == 2 and trace_id not in replays.split("result_list")[1]
