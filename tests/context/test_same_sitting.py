"""Episodes of the sitting of a call's best episodes are lifted (context.scoring.same_sitting_lift): of two turns
alike to the question, the one said in the same sitting as the best hits ranks first. Facts that open with the stamp
of the call's best facts are lifted alike (context.scoring.same_stamp_lift)."""

import pytest
from django.utils import timezone

from context import scoring
from tests.context.calls import ask, decisions
from facts.text import leading_stamp
from tests.facts.factories import EventFactory, FactFactory

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


STAMP, LATER = "[1:56 pm on 8 May, 2023]", "[3:10 pm on 27 May, 2023]"


def _chat_as_facts():
    """The same chat stored turn by turn as facts, each opening with its sitting's stamp: three turns about the support
    group, the reply in that sitting, and the same reply in a later one."""
    for text in (
        "Caroline: I went to the support group yesterday.",
        "Melanie: How was the support group?",
        "Caroline: The support group told their stories.",
    ):
        FactFactory(text=f"{STAMP} {text}")
    same = FactFactory(text=f"{STAMP} Caroline: It was lovely, truly.")
    later = FactFactory(text=f"{LATER} Caroline: It was lovely, truly.")
    plain = FactFactory(text="Caroline: It was lovely, truly.")
    return same, later, plain


def _unlifted(row) -> float:
    return scoring.hybrid_score(row.similarity, row.text_rank, row.recency)


def _about(score: float):
    return pytest.approx(score, abs=1e-5)  # a decision row keeps six decimals of each part


def test_a_fact_with_the_stamp_of_the_best_facts_is_lifted(api):
    # given turns stored as facts, the best of them opening with one stamp
    same, later, plain = _chat_as_facts()
    # when a call ranks them
    ranked = decisions(ask(api, "What did Caroline think of the support group?", budget=900))
    # then the reply of the best turns' sitting is lifted by W_SAME_STAMP, the same reply of another sitting and the
    # one with no stamp are not
    assert ranked[str(same.id)].score == _about(_unlifted(ranked[str(same.id)]) * (1 + scoring.W_SAME_STAMP))
    assert ranked[str(later.id)].score == _about(_unlifted(ranked[str(later.id)]))
    assert ranked[str(plain.id)].score == _about(_unlifted(ranked[str(plain.id)]))


def test_without_the_stamp_lift_no_fact_is_lifted(api):
    same, _, _ = _chat_as_facts()
    packet = ask(api, "What did Caroline think of the support group?", budget=900)
    response = api.post(
        f"/v1/inspect/{packet['trace_id']}/replay",
        {"as_of": "now", "overrides": {"w_same_stamp": 0.0}},
        format="json",
    )
    assert response.status_code == 200, response.content
    row = decisions(response.json()["packet"])[str(same.id)]
    assert row.score == _about(_unlifted(row))


def test_facts_without_stamps_are_not_lifted(api):
    facts = [FactFactory(text=f"Caroline went to the support group on day {i}.") for i in range(5)]
    ranked = decisions(ask(api, "When did Caroline go to the support group?", budget=900))
    for fact in facts:
        assert ranked[str(fact.id)].score == _about(_unlifted(ranked[str(fact.id)]))


@pytest.mark.parametrize(
    "text, stamp",
    [
        (f"{STAMP} Caroline: hi", STAMP),
        (f"  {STAMP}Caroline: hi", STAMP),
        ("Caroline: hi [1:56 pm]", ""),
        ("[" + "x" * 81 + "] too long to be a stamp", ""),
        ("no stamp", ""),
    ],
)
def test_leading_stamp(text, stamp):
    assert leading_stamp(text) == stamp
