"""Episodes of the sitting of a call's best episodes are lifted (context.scoring.same_sitting_lift): of two turns
alike to the question, the one said in the same sitting as the best hits ranks first."""

import pytest
from django.utils import timezone

from context import scoring
from tests.context.calls import ask, decisions
from tests.facts.factories import EventFactory

pytestmark = pytest.mark.django_db


def _chat():
    """Three turns about the support group five days ago, and the same reply twice: in that sitting, and two days
    later (more recent, so first on recency alone)."""
    sitting = timezone.now() - timezone.timedelta(days=5)
    for i, text in enumerate(
        ["Caroline: I went to the support group yesterday.", "Melanie: How was the support group?"]
        + ["Caroline: The support group told their stories."]
    ):
        EventFactory(text=text, occurred_at=sitting + timezone.timedelta(minutes=i))
    same = EventFactory(text="Caroline: It was lovely, truly.", occurred_at=sitting + timezone.timedelta(minutes=3))
    later = EventFactory(text="Caroline: it was lovely truly", occurred_at=sitting + timezone.timedelta(days=2))
    return same, later


def test_a_turn_of_the_best_turns_sitting_ranks_above_the_same_words_said_later(api):
    same, later = _chat()
    ranked = decisions(ask(api, "What did Caroline think of the support group?", budget=900))
    assert ranked[str(same.id)].rank < ranked[str(later.id)].rank
    # lifted by W_SAME_SITTING, less what two days of recency take from it (0.05 x 0.06 of a score of ~0.5)
    assert ranked[str(same.id)].score / ranked[str(later.id)].score > 1 + scoring.W_SAME_SITTING / 2


def test_without_the_lift_recency_decides(api):
    same, later = _chat()
    packet = ask(api, "What did Caroline think of the support group?", budget=900)
    response = api.post(
        f"/v1/inspect/{packet['trace_id']}/replay",
        {"as_of": "now", "overrides": {"w_same_sitting": 0.0}},
        format="json",
    )
    assert response.status_code == 200, response.content
    ranked = decisions(response.json()["packet"])
    assert ranked[str(later.id)].rank < ranked[str(same.id)].rank
