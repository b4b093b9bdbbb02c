"""A batch of similar long texts costs linear time under its subject's write lock (issue 13: 50 facts of ~7k
characters took 8 s, 400 took 6 minutes). Timings live in scripts/bench_batch.py; this pins what made it linear:
how many pairs the rules compare, and that each text is read once."""

import pytest

from facts import text, verdicts, writes
from facts.models import Fact
from facts.writes import BATCH_NEIGHBOURS, FactInput, fact_create_batch
from tests.conftest import PROJECT

pytestmark = pytest.mark.django_db

N = 60


def similar_long_texts(n: int) -> list[str]:
    body = " ".join(f"Alice went to the market in Paris and bought {w} apples" for w in ["red", "green", "ripe"] * 40)
    return [f"{body} and paid {100 + i} euros." for i in range(n)]


def test_a_batch_of_similar_texts_compares_each_with_a_bounded_number_of_earlier_ones(monkeypatch):
    # given 60 near-identical texts of ~3k characters, each a different number in the same slot
    pairs, analysed = [], []
    verdict, analyse = verdicts.pair_verdict, text.analyse
    monkeypatch.setattr(writes, "pair_verdict", lambda a, b, s: pairs.append(1) or verdict(a, b, s))
    monkeypatch.setattr(verdicts, "analyse", lambda t: analysed.append(1) or analyse(t))
    items = [FactInput(project_id=PROJECT, subject_id="alice", text=t) for t in similar_long_texts(N)]
    # when they are written as one batch
    results = fact_create_batch(items=items, actor="test")
    # then every one is stored and contradicts an earlier one (the rules still run) ...
    assert Fact.objects.count() == N and sum(1 for r in results if r.conflict_set) == N - 1
    # ... but each is compared with at most BATCH_NEIGHBOURS earlier items (all 1,770 pairs before), and each
    # text is analysed once
    assert len(pairs) <= N * BATCH_NEIGHBOURS < N * (N - 1) // 2
    assert len(analysed) == N


def test_the_most_similar_earlier_facts_are_the_ones_compared(monkeypatch):
    # given more similar earlier facts than are compared, the one a new fact contradicts is its nearest
    monkeypatch.setattr(writes, "BATCH_NEIGHBOURS", 2)
    base = "Alice keeps her bicycle in the shed behind the house near the garden"
    items = [
        FactInput(project_id=PROJECT, subject_id="alice", text=t)
        for t in [
            f"{base} and waters roses.",
            f"{base} and waters tulips.",
            f"{base} and waters lilies.",
            "Alice does not keep her bicycle in the shed behind the house near the garden and waters lilies.",
        ]
    ]
    results = fact_create_batch(items=items, actor="test")
    assert results[3].conflict_set is not None
    members = set(results[3].conflict_set.members.values_list("fact__text", flat=True))
    assert f"{base} and waters lilies." in members
