"""Conversation memory on real chats: a slice of the LoCoMo development conversations in the suite, so that a
regression in how hakimem serves a conversation stored turn by turn fails CI.

The harness (scripts/eval_locomo.py) writes both development conversations through the public API in each of
the three storage modes and asks the first 25 questions of each, with the hashing embedder (the MiniLM figures
are in docs/quality.md). The data is read from ../shared/data/locomo-dev beside the checkout (or
$HAKI_LOCOMO_DATA): its licence forbids copying it here, so without it these tests are skipped.
"""

import pytest
from django.test.utils import override_settings

from facts.models import Event, Fact
from hakimem.models import ApiKey
from bench.locomo import DEFAULT_DATA, MODES, format_report, run
from traces.models import Trace

# Every test a database test: pytest-django runs database tests before the others, so a module mixing both would
# be split in two and build its report (a minute and a half) twice.
pytestmark = [
    pytest.mark.skipif(not DEFAULT_DATA.exists(), reason=f"LoCoMo development data not found at {DEFAULT_DATA}"),
    pytest.mark.django_db,
]

QUESTIONS_PER_CONVERSATION = 25

# Measured on this slice (hashing embedder, 900 tokens), when the floors were set: hakimem events 0.637, facts
# 0.632, extracted 0.668; bm25 0.645, rrf 0.662, dense 0.540. The floors are about two questions (0.04) below.
# Before episodes took the two-phase path and before the negation rule required the same claim, the same slice
# measured events 0.41 and facts 0.39 (every call degraded by false conflict sets): both fail.
# The pipeline mode (the same observations, replayed through the extraction queue, worker and write path) measured
# 0.668 where that run's direct write measured 0.675 (the facts' recording times differ, so does recency): every
# observation came through, and the two must stay within about a question of each other.
FLOORS = {"events": 0.60, "facts": 0.59, "extracted": 0.63, "pipeline": 0.63}


@pytest.fixture(scope="module")
def report(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock(), override_settings(HAKI_RECALL_MAX_DISTANCE=None, HAKI_CONFLICT_POLICY="curator"):
        result = run(embedder="hashing", max_questions=QUESTIONS_PER_CONVERSATION)
    print("\n" + format_report(result))
    return result


def recall(report, mode, system="hakimem"):
    return report["modes"][mode]["summary"][system]["evidence_recall"]


def test_the_slice_covers_both_conversations_and_every_mode(report):
    assert report["config"]["conversations"] == ["conv-26", "conv-30"]
    assert report["config"]["questions"] == 2 * QUESTIONS_PER_CONVERSATION
    assert set(report["modes"]) == set(MODES)


@pytest.mark.parametrize("mode", list(MODES))
def test_evidence_recall_floor(report, mode):
    assert recall(report, mode) >= FLOORS[mode], format_report(report)


@pytest.mark.parametrize("mode", list(MODES))
def test_not_below_the_dense_baseline(report, mode):
    assert recall(report, mode) >= recall(report, mode, "dense")


def test_the_extraction_pipeline_serves_what_the_direct_write_of_the_same_facts_serves(report):
    """LoCoMo's observations written directly (extracted) or answered by a stand-in model for each turn's event and
    written by the extraction worker (pipeline): the same facts, so the same evidence, and every event done."""
    pipeline, extracted = report["modes"]["pipeline"], report["modes"]["extracted"]
    for sample, load in pipeline["load"].items():
        assert load["extraction_done"] == load["events"], load
        assert load["extracted_facts"] == extracted["load"][sample]["facts"] - extracted["load"][sample]["deduplicated"]
    # Within 0.03: facts of equal score are ordered by their random ids, so which of two ties is packed at the
    # budget's edge differs from run to run, and with it part of a question's evidence or two (a clean run saw
    # 0.688 against 0.668, printed rounded, and failed the 0.02 this test allowed before).
    assert abs(recall(report, "pipeline") - recall(report, "extracted")) <= 0.03, format_report(report)


def test_a_chat_stored_turn_by_turn_opens_no_conflict_set(report):
    """No turn of these chats contradicts another by a reader's judgement: a conflict set here is a false one,
    and it would hide its members from every call."""
    for mode in MODES:
        assert all(load["open_conflict_sets"] == 0 for load in report["modes"][mode]["load"].values()), mode
        assert report["modes"][mode]["summary"]["hakimem"]["status"] == {"ok": 2 * QUESTIONS_PER_CONVERSATION}


def test_turns_stored_as_events_fill_the_budget(report):
    """With the old cap of 8 nearest episodes a packet held ~300 of 900 tokens."""
    assert report["modes"]["events"]["summary"]["hakimem"]["tokens_per_call"] >= 850


def test_the_harness_leaves_nothing_behind(report):
    for model in (Fact, Event, Trace, ApiKey):
        assert not model.objects.filter(project_id__startswith="locomo-").exists(), model.__name__


def test_kept_the_modes_project_stays_with_its_memory_and_traces():
    """Given --keep, when one conversation is written and asked, then its project keeps the turns and the calls'
    traces (a database to move elsewhere), and the harness's own key is still deleted."""
    with override_settings(HAKI_RECALL_MAX_DISTANCE=None):
        kept = run(embedder="hashing", modes=["events"], samples=["conv-30"], max_questions=2, keep=True)
    project_id = kept["modes"]["events"]["project_id"]
    assert Event.objects.filter(project_id=project_id, subject_id="conv-30").count() == 369
    assert Trace.objects.filter(project_id=project_id).count() == 2
    assert not ApiKey.objects.filter(project_id=project_id).exists()
