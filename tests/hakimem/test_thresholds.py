"""Each embedder's cosine thresholds (hakimem.embeddings.thresholds): its own values, unless an operator sets one."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bench.thresholds import carry_floor, carry_similarity
from context.config import default_config
from facts.verdicts import CONFLICT, DISTINCT, DUPLICATE, pair_verdict
from hakimem.embeddings import PROVIDERS, Thresholds, thresholds

MINILM = Thresholds(
    conflict_min_similarity=0.75, claim_min_similarity=0.3, duplicate_similarity=0.92, recall_max_distance=0.85
)
E5 = Thresholds(
    conflict_min_similarity=0.94, claim_min_similarity=0.80, duplicate_similarity=0.98, recall_max_distance=0.26
)


def test_minilm_keeps_the_values_it_was_calibrated_with():
    assert thresholds("sentence-transformers") == MINILM


def test_an_embedder_calibrated_for_none_keeps_minilms_similarities_and_no_floor():
    for provider in ("hashing", "minilm-int8", "openai"):
        assert thresholds(provider) == Thresholds(0.75, 0.3, 0.92, 0.0)


def test_e5_gets_its_own_values():
    assert thresholds("multilingual-e5-small") == E5
    assert E5.claim_min_similarity > MINILM.claim_min_similarity  # its unrelated facts lie near 0.79


def test_the_configured_embedder_is_read_at_call_time(settings):
    settings.HAKI_EMBED_PROVIDER = "multilingual-e5-small"
    assert thresholds() == E5 and default_config().max_distance == E5.recall_max_distance
    settings.HAKI_EMBED_PROVIDER = "sentence-transformers"
    assert thresholds() == MINILM and default_config().max_distance == 0.85


def test_a_setting_replaces_its_threshold_for_every_embedder_and_only_that_one(settings):
    settings.HAKI_CONFLICT_MIN_SIMILARITY = 0.8
    settings.HAKI_RECALL_MAX_DISTANCE = 0.0  # the floor off, on purpose
    for provider in PROVIDERS:
        own = thresholds(provider)
        assert (own.conflict_min_similarity, own.recall_max_distance) == (0.8, 0.0)
    assert thresholds("multilingual-e5-small").duplicate_similarity == E5.duplicate_similarity
    assert thresholds("sentence-transformers").claim_min_similarity == 0.3


def test_an_environment_variable_wins_over_the_embedders_value():
    """Through config/settings.py, as a deployment sets it: a variable set wins, an empty one is unset."""
    child = (
        "import dataclasses, django, json; django.setup()\n"
        "from hakimem.embeddings import thresholds\n"
        "print(json.dumps(dataclasses.asdict(thresholds())))\n"
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none",  # never connects
        "HAKI_EMBED_PROVIDER": "multilingual-e5-small",
        "HAKI_DUPLICATE_SIMILARITY": "0.97",
        "HAKI_CONFLICT_MIN_SIMILARITY": "",
    }
    env.pop("HAKI_CLAIM_MIN_SIMILARITY", None)
    env.pop("HAKI_RECALL_MAX_DISTANCE", None)
    out = subprocess.run(
        [sys.executable, "-c", child],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env=env,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {
        "conflict_min_similarity": E5.conflict_min_similarity,
        "claim_min_similarity": E5.claim_min_similarity,
        "duplicate_similarity": 0.97,
        "recall_max_distance": E5.recall_max_distance,
    }


@pytest.mark.parametrize(
    ("provider", "negation", "repeat"),
    [("sentence-transformers", CONFLICT, DUPLICATE), ("multilingual-e5-small", DISTINCT, DISTINCT)],
)
def test_a_write_judges_a_pair_by_the_configured_embedders_thresholds(settings, provider, negation, repeat):
    # given pairs at cosines above MiniLM's thresholds and below e5's
    settings.HAKI_EMBED_PROVIDER = provider
    conflict = (MINILM.conflict_min_similarity + E5.conflict_min_similarity) / 2
    duplicate = (MINILM.duplicate_similarity + E5.duplicate_similarity) / 2
    assert pair_verdict("The rent is 920 euros a month.", "The rent is 850 euros a month.", conflict)[0] == negation
    assert pair_verdict("Paul now lives in Nantes.", "Paul lives in Nantes.", duplicate)[0] == repeat


def test_a_threshold_is_carried_by_the_share_it_lets_through():
    reference = np.arange(100) / 100  # MiniLM's cosines of a population of pairs
    target = 0.5 + reference / 2  # another embedder's of the same pairs, squeezed upwards
    share, carried = carry_similarity(reference, target, 0.75)
    assert share == 0.25 and carried == 0.88  # 0.871 rounded up: never more pairs through than with MiniLM
    assert carry_similarity(reference, target, 0.75, round_up=False) == (0.25, 0.87)  # a floor that must let through
    # a floor is a distance: the same share of relevant items kept
    kept, floor = carry_floor(reference, target, 0.85)
    assert kept == 0.86 and floor == 0.93  # 0.926 rounded up: never more relevant items lost
