"""The relevance floor: candidates too far from the question are not served, a call with nothing near answers
no_relevant_memory, and the floor is the calibrated embedder's unless one is set."""

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.context.calls import ask, decisions
from tests.facts.factories import EventFactory, FactFactory
from traces.models import Trace

pytestmark = pytest.mark.django_db


def test_floor_can_empty_a_call_honestly(api, settings):
    FactFactory(text="Alice's cat is called Miso.")
    EventFactory(text="Alice adopted Miso at the shelter.")
    settings.HAKI_RECALL_MAX_DISTANCE = 0.05
    packet = ask(api, "What is the capital of Australia?")
    assert packet["facts"] == [] and packet["episodes"] == []
    assert packet["empty_reason"] == "no_relevant_memory"
    assert packet["status"] == "ok" and packet["warnings"] == []
    assert packet["rendered"] == ""
    assert {d.reason_code for d in decisions(packet).values()} == {"below_relevance_floor"}


def test_floor_is_off_for_an_embedder_never_calibrated(api, settings):
    settings.HAKI_RECALL_MAX_DISTANCE = None  # unset: the floor calibrated for the embedder, and hashing has none
    FactFactory(text="Alice's cat is called Miso.")
    packet = ask(api, "What is the capital of Australia?")
    assert len(packet["facts"]) == 1 and packet["empty_reason"] is None and packet["empty_details"] is None
    assert Trace.objects.get(id=packet["trace_id"]).inputs["config"]["max_distance"] == 0.0


# A scope of a few items, every one of which fits the budget: the floor alone keeps the far ones out.
SMALL_SCOPE_FACTS = (
    "Bob is a vegetarian.",
    "The kitchen tap leaks when it rains.",
    "Keeps a spare key under the blue flowerpot.",
)
SMALL_SCOPE_EPISODE = "Bob booked flights to Lisbon for July 10-20."


@pytest.mark.minilm
def test_small_scope_serves_what_is_relevant_not_whatever_is_there(api, settings):
    settings.HAKI_EMBED_PROVIDER = "sentence-transformers"
    settings.HAKI_RECALL_MAX_DISTANCE = None  # the default: MiniLM's calibrated floor
    facts = {text: FactFactory(text=text, subject_id="bob") for text in SMALL_SCOPE_FACTS}
    flights = EventFactory(text=SMALL_SCOPE_EPISODE, subject_id="bob", occurred_at=timezone.now() - timedelta(days=120))
    packet = ask(api, "Where is Bob flying to in July?", subject="bob")
    assert [e["text"] for e in packet["episodes"]] == [SMALL_SCOPE_EPISODE]
    rows = decisions(packet)
    assert rows[str(flights.id)].reason_code == "included"
    for text in ("The kitchen tap leaks when it rains.", "Keeps a spare key under the blue flowerpot."):
        assert rows[str(facts[text].id)].reason_code == "below_relevance_floor"
    assert packet["used_tokens"] < 100 and packet["empty_reason"] is None


@pytest.mark.minilm
def test_small_scope_with_nothing_relevant_answers_no_relevant_memory(api, settings):
    settings.HAKI_EMBED_PROVIDER = "sentence-transformers"
    settings.HAKI_RECALL_MAX_DISTANCE = None
    for text in SMALL_SCOPE_FACTS:
        FactFactory(text=text, subject_id="bob")
    EventFactory(text=SMALL_SCOPE_EPISODE, subject_id="bob")
    packet = ask(api, "What is the capital of Australia?", subject="bob")
    assert packet["facts"] == [] and packet["episodes"] == [] and packet["rendered"] == ""
    assert packet["empty_reason"] == "no_relevant_memory" and packet["status"] == "ok"
    assert {d.reason_code for d in decisions(packet).values()} == {"below_relevance_floor"}


def test_an_explicit_floor_wins_over_the_calibrated_one(settings):
    from context.config import default_config
    from hakimem.embeddings import THRESHOLDS

    settings.HAKI_EMBED_PROVIDER = "sentence-transformers"
    settings.HAKI_RECALL_MAX_DISTANCE = None
    assert default_config().max_distance == THRESHOLDS["sentence-transformers"].recall_max_distance > 0
    settings.HAKI_RECALL_MAX_DISTANCE = 0.0  # off, on purpose
    assert default_config().max_distance == 0.0
    settings.HAKI_RECALL_MAX_DISTANCE = 0.7
    assert default_config().max_distance == 0.7
    settings.HAKI_EMBED_PROVIDER = "openai"  # never calibrated: off unless set
    settings.HAKI_RECALL_MAX_DISTANCE = None
    assert default_config().max_distance == 0.0
