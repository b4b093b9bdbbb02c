"""Why a context call came back empty: every packet that served nothing names one empty reason (and its numbers in
empty_details), the trace keeps both, and a replay gives the same reason. A packet that served something has none,
and says in its warnings what was blocked."""

import re

import pytest
from django.utils import timezone

from tests.conftest import PROJECT, REQUEST_OVERHEAD_QUERIES, TRACE_TRANSACTION_QUERIES
from tests.facts.factories import ConflictSetFactory, EventFactory, FactFactory, IdentityBlockFactory, ProcedureFactory
from traces.models import EmptyReason, Trace

pytestmark = pytest.mark.django_db

LONG_AGO = timezone.now() - timezone.timedelta(days=400)


def stale(text):
    """A volatile fact last confirmed long ago: blocked as expired."""
    return FactFactory(text=text, volatility="volatile", recorded_from=LONG_AGO, last_confirmed_at=LONG_AGO)


def ask(api, query="What does Alice like?", subject="alice", budget=None, **asks):
    payload = {"project_id": PROJECT, "subject_id": subject, "query": query, **asks}
    if budget is not None:
        payload["budget_tokens"] = budget
    response = api.post("/v1/context", payload, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def post_fact(api, text, subject="alice", **fields):
    response = api.post(
        "/v1/facts", {"project_id": PROJECT, "subject_id": subject, "text": text, **fields}, format="json"
    )
    assert response.status_code == 201, response.content
    return response.json()


def assert_empty(packet, reason, details=None, status="ok"):
    """The packet served nothing, says why, and its trace says the same."""
    assert (packet["facts"], packet["episodes"], packet["rendered"], packet["used_tokens"]) == ([], [], "", 0)
    assert (packet["empty_reason"], packet["empty_details"], packet["status"]) == (reason, details, status)
    trace = Trace.objects.get(id=packet["trace_id"])
    assert (trace.empty_reason, trace.empty_details, trace.used_tokens) == (reason, details, 0)


# --- the scope ------------------------------------------------------------------------------------------------


def test_a_subject_nothing_was_written_for_is_unknown(api):
    # given memory for another subject, and a procedure and an identity block for the whole project
    FactFactory(text="Bob likes jazz.", subject_id="bob")
    ProcedureFactory(subject_id="", title="Greeting", text="Greet the user by name.")
    IdentityBlockFactory(subject_id="", name="persona", text="You are a helpful assistant.")
    # when a plain call asks about a subject the project never wrote anything for
    packet = ask(api, subject="nobody")
    # then it is empty because the scope is unknown: a call that is not a failure, with no warning
    assert_empty(packet, "scope_unknown")
    assert packet["warnings"] == []


def test_an_erased_subject_is_unknown_again(api):
    post_fact(api, "Alice likes jazz.")
    assert ask(api)["facts"]
    assert api.delete(f"/v1/subjects/alice?project_id={PROJECT}").status_code == 200
    assert_empty(ask(api), "scope_unknown")


def test_a_scope_emptied_by_retraction_is_empty_not_unknown(api):
    # given a subject whose only fact was retracted
    fact = post_fact(api, "Alice likes jazz.")
    assert api.delete(f"/v1/facts/{fact['id']}").status_code in (200, 204)
    # when a call asks about it, then the scope exists but holds nothing to serve
    assert_empty(ask(api), "scope_empty")


def test_a_scope_of_superseded_and_lapsed_facts_only_is_empty(api):
    now = timezone.now()
    FactFactory(text="Alice lives in Porto.", valid_to=now - timezone.timedelta(days=1))
    FactFactory(
        text="Alice lives in Faro.",
        status="superseded",
        recorded_to=now,
        superseded_by=FactFactory(text="Alice lives in Braga.", status="retracted", recorded_to=now),
    )
    assert_empty(ask(api), "scope_empty")


def test_a_plain_call_for_a_subject_with_only_its_own_procedures_is_empty(api):
    # a plain call serves no procedure nor identity block: the subject is known, its scope holds nothing to serve
    ProcedureFactory(subject_id="alice", title="Report", text="Write the report as a list.")
    assert_empty(ask(api), "scope_empty")


def test_an_event_alone_makes_a_scope_servable(api):
    EventFactory(text="Alice went to a jazz concert.")
    packet = ask(api)
    assert packet["episodes"] and packet["empty_reason"] is None and packet["empty_details"] is None


# --- the budget -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("budget", [1, 5])
def test_a_budget_too_small_for_any_item_says_which_budget_would_serve_one(api, budget):
    # given facts that each need more than a handful of tokens once rendered
    FactFactory(text="Alice likes jazz, especially the records of the Blue Note label from the sixties.")
    FactFactory(text="Alice likes long walks along the river on Sunday mornings.")
    # when a call gives a budget of 1 or 5 tokens
    packet = ask(api, budget=budget)
    # then it is empty because of the budget, and says the smallest budget that serves something
    assert packet["empty_reason"] == "budget_too_small"
    smallest = packet["empty_details"]["smallest_fitting_budget"]
    assert_empty(packet, "budget_too_small", {"smallest_fitting_budget": smallest})
    assert smallest > budget and packet["warnings"] == []
    # and that budget does serve something, one token less does not
    served = ask(api, budget=smallest)
    assert len(served["facts"]) == 1 and served["used_tokens"] <= smallest and served["empty_reason"] is None
    assert "walks" in served["facts"][0]["text"]  # the cheaper of the two
    assert ask(api, budget=smallest - 1)["empty_reason"] == "budget_too_small"


def test_the_budget_comes_before_what_blocked_the_other_candidates(api):
    ConflictSetFactory(members=[FactFactory(text="Alice likes jazz."), FactFactory(text="Alice does not like jazz.")])
    FactFactory(text="Alice likes long walks along the river on Sunday mornings.")
    packet = ask(api, budget=5)
    assert packet["empty_reason"] == "budget_too_small" and packet["facts"] == []
    assert "open_conflict: 2 fact(s) hidden pending conflict resolution" in packet["warnings"]


def test_a_tiered_call_names_the_tier_whose_budget_is_too_small(api):
    FactFactory(text="Alice likes long walks along the river on Sunday mornings.")
    packet = ask(api, tier_budgets={"facts": 2})
    details = packet["empty_details"]
    assert packet["empty_reason"] == "budget_too_small" and details["tier"] == "facts"
    assert details["smallest_fitting_tier_budget"] > 2
    served = ask(api, tier_budgets={"facts": details["smallest_fitting_tier_budget"]})
    assert len(served["facts"]) == 1 and served["empty_reason"] is None


# --- blocked --------------------------------------------------------------------------------------------------


def test_every_fact_in_an_open_conflict_is_all_blocked_and_the_warning_stays(api):
    # given two facts that contradict each other, written through the API: an open conflict set holds both
    post_fact(api, "Paul lives in Nantes with his wife and their two children.")
    post_fact(api, "Paul lives in Bordeaux with his wife and their two children.")
    # when a call asks, then nothing is served, every candidate being blocked by the conflict
    packet = ask(api, "Where does Paul live?")
    assert_empty(packet, "all_blocked", {"conflict_open": 2}, status="degraded")
    assert packet["warnings"] == ["open_conflict: 2 fact(s) hidden pending conflict resolution"]


def test_facts_without_consent_are_all_blocked(api):
    api.patch("/v1/project", {"consent_required": True, "consent_write_policy": "store"}, format="json")
    post_fact(api, "Alice takes insulin twice a day.", category="health")
    post_fact(api, "Alice plays the cello.", category="hobby")
    packet = ask(api, "What about Alice's health and her cello?")
    assert_empty(packet, "all_blocked", {"consent_missing": 2}, status="degraded")
    assert "consent_missing: 2 fact(s) withheld without the subject's consent to their category" in packet["warnings"]


def test_stale_volatile_facts_are_all_blocked(api):
    stale("Alice is travelling in Peru.")
    packet = ask(api, "Where is Alice travelling?")
    assert_empty(packet, "all_blocked", {"volatility_expired": 1}, status="degraded")
    assert packet["warnings"] == ["volatility_expired: 1 fact(s) hidden as stale"]


def test_blocked_by_several_reasons_counts_each(api):
    ConflictSetFactory(members=[FactFactory(text="Alice lives in Peru."), FactFactory(text="Alice lives in Chile.")])
    stale("Alice is travelling in Peru.")
    packet = ask(api, "Where is Alice?")
    assert_empty(packet, "all_blocked", {"conflict_open": 2, "volatility_expired": 1}, status="degraded")


# --- relevance ------------------------------------------------------------------------------------------------


def test_memory_beyond_the_floor_is_no_relevant_memory(api, settings):
    FactFactory(text="Alice's cat is called Miso.")
    EventFactory(text="Alice adopted Miso at the shelter.")
    settings.HAKI_RECALL_MAX_DISTANCE = 0.05
    packet = ask(api, "What is the capital of Australia?")
    assert_empty(packet, "no_relevant_memory")
    assert packet["warnings"] == []


def test_memory_under_the_calls_min_score_is_no_relevant_memory(api):
    FactFactory(text="Alice's cat is called Miso.")
    assert_empty(ask(api, "What is the capital of Australia?", min_score=5.0), "no_relevant_memory")


def test_a_blocked_fact_beyond_the_floor_leaves_no_relevant_memory(api, settings):
    # the floor would have excluded the stale fact anyway: unblocking it would serve nothing
    stale("Alice's cat is called Miso.")
    FactFactory(text="Alice's dog is called Rex.")
    settings.HAKI_RECALL_MAX_DISTANCE = 0.05
    packet = ask(api, "What is the capital of Australia?")
    assert_empty(packet, "no_relevant_memory", status="degraded")
    assert packet["warnings"] == ["volatility_expired: 1 fact(s) hidden as stale"]


# --- partial answers ------------------------------------------------------------------------------------------


def test_a_partial_answer_has_no_empty_reason_and_warns_of_what_was_blocked(api):
    FactFactory(text="Alice likes jazz.")
    ConflictSetFactory(members=[FactFactory(text="Alice lives in Peru."), FactFactory(text="Alice lives in Chile.")])
    packet = ask(api, "What does Alice like and where does she live?")
    assert [f["text"] for f in packet["facts"]] == ["Alice likes jazz."]
    assert packet["empty_reason"] is None and packet["empty_details"] is None and packet["status"] == "degraded"
    assert packet["warnings"] == ["open_conflict: 2 fact(s) hidden pending conflict resolution"]


def test_a_partial_answer_over_budget_is_not_degraded(api):
    for i in range(6):
        FactFactory(text=f"Alice collects vintage stamps from country number {i}.")
    packet = ask(api, "Which stamps does Alice collect?", budget=30)
    assert packet["facts"] and packet["empty_reason"] is None and packet["empty_details"] is None
    assert packet["status"] == "ok" and packet["warnings"] == []


# --- the cost of knowing ----------------------------------------------------------------------------------------


def test_only_a_call_without_any_candidate_reads_the_scope(api, django_assert_num_queries):
    FactFactory(text="Alice likes long walks along the river on Sunday mornings.")
    ask(api)  # warms the connection
    # the statistics' version, consent gate, facts and episodes together, trace + decisions: as a call that serves
    # something
    with django_assert_num_queries(4 + REQUEST_OVERHEAD_QUERIES + TRACE_TRANSACTION_QUERIES):
        assert ask(api, budget=1)["empty_reason"] == "budget_too_small"
    # and one statement more to tell an unknown scope from an empty one
    with django_assert_num_queries(5 + REQUEST_OVERHEAD_QUERIES + TRACE_TRANSACTION_QUERIES):
        assert ask(api, subject="nobody")["empty_reason"] == "scope_unknown"


# --- inspect and replay -----------------------------------------------------------------------------------------


def replay(api, trace_id, **body):
    response = api.post(f"/v1/inspect/{trace_id}/replay", body, format="json")
    assert response.status_code == 200, response.content
    return response.json()["packet"]


def test_inspect_shows_the_reason_and_its_details(api):
    FactFactory(text="Alice likes long walks along the river on Sunday mornings.")
    packet = ask(api, budget=1)
    inspected = api.get(f"/v1/inspect/{packet['trace_id']}").json()["packet"]
    assert inspected["empty_reason"] == "budget_too_small"
    assert inspected["empty_details"] == packet["empty_details"]


@pytest.mark.parametrize("as_of", ["now", "original"])
def test_a_replay_gives_the_calls_reason(api, settings, as_of):
    # given one empty call of each reason
    ConflictSetFactory(
        subject_id="carol",
        members=[
            FactFactory(subject_id="carol", text="Carol lives in Peru."),
            FactFactory(subject_id="carol", text="Carol lives in Chile."),
        ],
    )
    FactFactory(subject_id="dave", text="Dave likes long walks along the river on Sunday mornings.")
    FactFactory(subject_id="erin", text="Erin's cat is called Miso.")
    FactFactory(
        subject_id="fred",
        text="Fred likes jazz.",
        status="retracted",
        recorded_from=LONG_AGO,
        recorded_to=LONG_AGO + timezone.timedelta(days=1),
    )
    calls = {
        "scope_unknown": ask(api, subject="nobody"),
        "scope_empty": ask(api, subject="fred"),
        "budget_too_small": ask(api, subject="dave", budget=3),
        "all_blocked": ask(api, "Where does Carol live?", subject="carol"),
    }
    settings.HAKI_RECALL_MAX_DISTANCE = 0.05
    calls["no_relevant_memory"] = ask(api, "What is the capital of Australia?", subject="erin")
    settings.HAKI_RECALL_MAX_DISTANCE = 0.0
    assert {reason: packet["empty_reason"] for reason, packet in calls.items()} == {r: r for r in calls}
    assert set(calls) == set(EmptyReason.values)
    # when each is replayed (under the floor its call had), then the replay says the same, with the same numbers
    for reason, packet in calls.items():
        floor = {"max_distance": 0.05} if reason == "no_relevant_memory" else {}
        again = replay(api, packet["trace_id"], as_of=as_of, overrides=floor)
        assert (again["empty_reason"], again["empty_details"]) == (reason, packet["empty_details"]), reason
        assert Trace.objects.get(id=again["trace_id"]).empty_reason == reason


def test_a_replay_as_it_was_reads_the_scope_as_it_was(api):
    # given a call about a subject unknown then, and a fact written for it since
    packet = ask(api, subject="newcomer")
    post_fact(api, "The newcomer likes jazz.", subject="newcomer")
    # then a replay as it was still finds the scope unknown, and one against the memory now serves the fact
    assert replay(api, packet["trace_id"], as_of="original")["empty_reason"] == "scope_unknown"
    now = replay(api, packet["trace_id"], as_of="now")
    assert now["empty_reason"] is None and len(now["facts"]) == 1


# --- the documentation says what the code does ---------------------------------------------------------------------


def test_the_schema_enumerates_the_empty_reasons(client):
    schema = client.get("/v1/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    packet = schema["components"]["schemas"]["ContextPacket"]["properties"]
    enum = packet["empty_reason"].get("enum") or next(
        schema["components"]["schemas"][ref["$ref"].rsplit("/", 1)[1]]["enum"]
        for ref in packet["empty_reason"].get("oneOf", packet["empty_reason"].get("allOf", []))
        if "$ref" in ref
    )
    assert [e for e in enum if e] == EmptyReason.values
    assert packet["empty_details"]["nullable"] is True


def test_the_api_reference_lists_every_empty_reason(settings):
    api = (settings.BASE_DIR / "docs" / "api.md").read_text()
    section = api[api.index("## Empty answers") : api.index("## Tiers and the structured prompt")]
    assert re.findall(r"^\| `(\w+)` \|", section, re.M)[1:] == EmptyReason.values  # after the header
