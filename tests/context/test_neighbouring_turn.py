"""The neighbouring turn: a chat stored turn by turn as events, where the question ranks and its answer, which shares
no word with the query, does not; the answer is served beside its question when it fits (neighbouring_turn)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tests.conftest import PROJECT
from tests.context.calls import ask, decisions
from tests.context.test_replay import decision_rows, replay
from tests.facts.factories import EventFactory

pytestmark = pytest.mark.django_db

QUERY = "What did Caroline bake for the garden party?"
START = timezone.now() - timezone.timedelta(days=3)


def chat(answer="Mel: a lemon tart, with ginger from the market.", subject="alice"):
    """A question turn and its answer a second later, among turns about the party that rank above the answer."""
    for i in range(8):
        EventFactory(
            subject_id=subject,
            text=f"Caroline: the garden party {i} was lovely, everyone came.",
            occurred_at=START - timezone.timedelta(hours=i + 1),
        )
    question = EventFactory(
        subject_id=subject, text="Caroline: what did you bake for the garden party?  ", occurred_at=START
    )
    answer = EventFactory(subject_id=subject, text=answer, occurred_at=START + timezone.timedelta(seconds=1))
    EventFactory(subject_id=subject, text="Mel: see you soon.", occurred_at=START + timezone.timedelta(minutes=5))
    return question, answer


def test_the_answer_to_a_served_question_is_served_beside_it(api):
    # given a chat where the question ranks first and its answer shares no word with the query
    question, answer = chat()
    # and another subject's turn between the question and its answer, which is not the question's neighbour
    EventFactory(subject_id="bob", text="Bob: lunch.", occurred_at=START + timezone.timedelta(milliseconds=500))

    # when a call's budget holds the question and a few turns
    packet = ask(api, QUERY, budget=60)

    # then the answer is served with its own reason code, rendered just after its question
    rows = decisions(packet)
    assert rows[str(question.id)].reason_code == "included" and rows[str(question.id)].rank == 1
    assert rows[str(answer.id)].reason_code == "neighbouring_turn" and rows[str(answer.id)].decision == "included"
    served = [e["id"] for e in packet["episodes"]]
    assert served.index(str(answer.id)) == served.index(str(question.id)) + 1
    rendered = packet["rendered"]
    assert rendered.index("lemon tart") > rendered.index("what did you bake")
    assert "see you soon" not in rendered  # the answer's own next turn is not offered: no chain
    assert packet["used_tokens"] <= 60


def test_an_answer_that_does_not_fit_is_not_served(api):
    # given the same chat, with an answer too long for what the question leaves of the budget
    question, answer = chat(answer="Mel: " + " ".join(["a lemon tart with ginger from the market"] * 8) + ".")

    # when a call's budget holds the question and a few short turns only
    packet = ask(api, QUERY, budget=60)

    # then the question is served, and its answer is not
    rows = decisions(packet)
    assert rows[str(question.id)].reason_code == "included"
    assert str(answer.id) not in {e["id"] for e in packet["episodes"]}
    assert rows[str(answer.id)].reason_code == "over_budget"
    assert packet["used_tokens"] <= 60


def test_a_replay_as_it_was_serves_the_answer_of_then(api):
    # given a call that served the answer beside its question
    question, answer = chat()
    original = ask(api, QUERY, budget=60)
    then = decision_rows(original["trace_id"])
    assert ("episode", None, answer.id, "included", "neighbouring_turn") in {r[:5] for r in then}
    # and a turn recorded since, dated between the question and its answer
    since = EventFactory(text="Mel: hmm.", occurred_at=START + timezone.timedelta(milliseconds=500))

    # when the call is replayed as the memory stood then, and against the memory now
    as_it_was = replay(api, original["trace_id"], as_of="original")
    now = replay(api, original["trace_id"])

    # then the replay as it was makes every decision again, and the replay now serves the new turn beside the question
    assert decision_rows(as_it_was["trace_id"]) == then and as_it_was["diff"]["identical"]
    assert as_it_was["packet"]["rendered"] == original["rendered"]
    assert decisions(now["packet"])[str(since.id)].reason_code == "neighbouring_turn"
    assert {item["item_id"] for item in now["diff"]["gained"]} >= {str(since.id)}


def test_a_call_serving_no_question_reads_no_next_turn(api):
    # given a chat, and a call that serves its turns but not the question (the budget holds one short turn)
    chat()
    with CaptureQueriesContext(connection) as counted:
        packet = ask(api, "Mel: see you soon.", budget=20)
    # then no statement looked for a next turn
    assert packet["episodes"] and not any(e["text"].endswith("?") for e in packet["episodes"])
    assert not any("after_id" in q["sql"] for q in counted.captured_queries)


def test_a_tiered_call_serves_the_answer_on_the_episodes_tier(api):
    # given the chat
    question, answer = chat()

    # when a tiered call's episodes tier holds the question and a few turns
    response = api.post(
        "/v1/context",
        {
            "project_id": PROJECT,
            "subject_id": "alice",
            "query": QUERY,
            "tiers": True,
            "tier_budgets": {"identity": 0, "preferences": 0, "facts": 0, "episodes": 50, "procedures": 0},
        },
        format="json",
    )

    # then the answer is served on that tier, just after its question
    assert response.status_code == 200, response.content
    packet = response.json()
    row = decisions(packet)[str(answer.id)]
    assert row.reason_code == "neighbouring_turn" and row.tier == "episodes"
    served = [e["id"] for e in packet["episodes"]]
    assert served.index(str(answer.id)) == served.index(str(question.id)) + 1
    assert packet["tiers"]["episodes"]["used_tokens"] <= 50
