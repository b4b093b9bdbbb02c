"""Retrieval quality on a slice of the labelled dataset: a recall regression fails CI.

The harness (scripts/eval_recall.py) runs once per embedder on four scopes (en-01, en-02, fr-01, fr-02) with
40 noise facts each and a 300-token budget, through the public API against the test database. It commits
what it writes (it is a client like any other) and erases every subject and its key at the end; the last
test checks that.

The floors are the recall measured when the tests were written minus a margin (see docs/quality.md), and
hakimem must not fall below the dense-only (hashing) or the RRF (MiniLM) baseline on the same slice.
"""

import pytest
from django.test.utils import override_settings

from facts.models import Event, Fact
from hakimem.models import ApiKey
from bench.quality_report import format_report
from bench.recall import run
from traces.models import Trace

SLICE = ["en-01", "en-02", "fr-01", "fr-02"]
NOISE = 40
BUDGET = 300

# Measured on the slice with one ranking for facts and episodes, a fifth of the budget held for multi-hop and
# W_RECENCY 0.05: hashing hakimem 0.722, dense 0.625, bm25 0.667, rrf 0.667; MiniLM hakimem 0.847, dense
# 0.806, bm25 0.667, rrf 0.833. Floors about two questions (0.06-0.07) below. The specified facts-first packing
# measured 0.417 / 0.556: going back to it fails both floors.
# MiniLM's default relevance floor (0.85) serves less noise in the budget: the MiniLM slice measures 0.917 with it.
# Every test a database test: pytest-django runs database tests before the others, so a module mixing both would
# be split in two and build its report twice.
pytestmark = pytest.mark.django_db

HASHING_FLOOR = 0.66
MINILM_FLOOR = 0.78


def _slice_report(django_db_blocker, embedder: str) -> dict:
    with django_db_blocker.unblock(), override_settings(HAKI_RECALL_MAX_DISTANCE=None, HAKI_CONFLICT_POLICY="curator"):
        report = run(scope_ids=SLICE, noise=NOISE, budget=BUDGET, embedder=embedder, seed=0)
    print("\n" + format_report(report))
    return report


@pytest.fixture(scope="module")
def hashing_report(django_db_setup, django_db_blocker):
    return _slice_report(django_db_blocker, "hashing")


@pytest.fixture(scope="module")
def minilm_report(django_db_setup, django_db_blocker):
    return _slice_report(django_db_blocker, "sentence-transformers")


def recall(report, system):
    return report["summary"][system]["overall"]["evidence_recall"]


def test_slice_covers_both_languages_and_every_question_type(hashing_report):
    summary = hashing_report["summary"]["hakimem"]
    assert set(summary["by_lang"]) == {"en", "fr"}
    assert set(summary["by_type"]) == {
        "paraphrase",
        "exact_name",
        "temporal",
        "multi_hop",
        "update",
        "distractor",
        "no_answer",
    }
    assert hashing_report["config"]["questions"] == 40


def test_hashing_recall_floor(hashing_report):
    assert recall(hashing_report, "hakimem") >= HASHING_FLOOR


def test_hashing_not_below_dense_baseline(hashing_report):
    assert recall(hashing_report, "hakimem") >= recall(hashing_report, "dense")


@pytest.mark.minilm
def test_minilm_recall_floor(minilm_report):
    assert recall(minilm_report, "hakimem") >= MINILM_FLOOR


@pytest.mark.minilm
def test_minilm_not_below_rrf_baseline(minilm_report):
    assert recall(minilm_report, "hakimem") >= recall(minilm_report, "rrf")


def test_the_harness_leaves_nothing_behind(hashing_report):
    project_id = hashing_report["config"]["project_id"]
    assert hashing_report["load"]["left_behind"] == []
    assert hashing_report["load"]["erased"]["traces"] == hashing_report["config"]["questions"]
    for model in (Fact, Event, Trace, ApiKey):
        assert not model.objects.filter(project_id=project_id).exists(), model.__name__
