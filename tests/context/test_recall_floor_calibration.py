"""bench/recall_floor.py: what a floor does to a packet, on made-up distances, and which distances it is calibrated on."""

import numpy as np

from bench.recall_floor import pack, packing_sweep, small_scopes


def scope(distances, relevant, tokens=10):
    d = np.array(distances, dtype=float)
    return d, np.full(len(d), tokens), np.array(relevant, dtype=bool)


def row(rows, kind, floor):
    return next(r for r in rows["floors"] if r["kind"] == kind and r["floor"] == floor)


def test_pack_serves_the_nearest_items_that_fit_and_are_kept():
    d, tokens, _ = scope([0.9, 0.2, 0.5], [False, True, False])
    assert pack(d, tokens, 20, np.ones(3, dtype=bool)).tolist() == [False, True, True]
    assert pack(d, tokens, 900, d <= 0.6).tolist() == [False, True, True]


def test_a_floor_frees_what_is_far_and_loses_a_relevant_item_only_beyond_it():
    # a small scope: everything fits; the relevant item at 0.3 and one at 0.72, irrelevant ones at 0.6 and 0.9
    answerable = [scope([0.3, 0.72, 0.6, 0.9], [True, True, False, False])]
    unanswerable = [scope([0.8, 0.95], [False, False])]
    rows = packing_sweep(answerable, unanswerable, budget=900)
    assert rows["recall_without"] == 1.0
    at_075 = row(rows, "absolute", 0.75)
    assert at_075["recall"] == 1.0 and at_075["relevant_lost"] == 0.0
    assert at_075["irrelevant_freed"] == 0.5  # the item at 0.9 of the two irrelevant ones
    assert at_075["no_answer_freed"] == 1.0 and at_075["no_answer_emptied"] == 1.0
    at_070 = row(rows, "absolute", 0.7)
    assert at_070["recall"] == 0.5 and at_070["relevant_lost"] == 0.5
    # relative to the nearest item (0.3): a margin of 0.35 keeps 0.6 and drops 0.72 and 0.9
    relative = row(rows, "relative", 0.35)
    assert relative["recall"] == 0.5 and relative["irrelevant_freed"] == 0.5
    assert relative["no_answer_emptied"] == 0.0  # a relative floor never empties a call


def test_small_scopes_hold_every_relevant_item_and_draw_the_rest():
    whole = scope(np.linspace(0.1, 0.99, 40), [i < 2 for i in range(40)])
    answerable, unanswerable = small_scopes([whole], size=10, seed=0)
    ((d, _, rel),) = answerable
    assert len(d) == 10 and rel.sum() == 2 and set(d[rel]) == set(whole[0][:2])
    ((d, _, rel),) = unanswerable
    assert len(d) == 10 and not rel.any()


def test_the_calibration_measures_questions_as_a_context_call_embeds_them(monkeypatch):
    """e5 embeds a question ("query: ") apart from what it searches ("passage: "): the distances a floor is
    calibrated on must be the ones a context call meets, the question through the query path."""
    from bench import recall_floor
    from hakimem import embeddings

    asked = []

    class Asymmetric(embeddings.HashingEmbedder):
        def _encode_queries(self, texts):
            asked.extend(texts)
            return self._encode([f"query {t}" for t in texts])

    embedder = Asymmetric(384)
    monkeypatch.setattr(embeddings, "get_embedder", lambda: embedder)
    question, items = "where does Bob live", ["Bob lives in Lyon.", "The invoice is overdue."]
    ((distances, _, relevant),) = recall_floor.scopes_from_pairs([(question, items[:1], items[1:])])
    assert asked == [question]
    expected = 1.0 - embedder.embed(items) @ embedder.embed([f"query {question}"])[0]
    assert np.allclose(distances, expected) and not np.allclose(
        distances, 1.0 - embedder.embed(items) @ embedder.embed([question])[0]
    )
    assert relevant.tolist() == [True, False]
