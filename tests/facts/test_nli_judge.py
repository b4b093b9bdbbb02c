"""The NLI judge measurement (bench/nli_judge.py): its figures are computed right, and it runs, or says why
not, whether or not a model package is installed. No model is needed for the figures."""

import json

import pytest

from bench import nli_judge


def _pair(pid, lang, kind, score):
    return {"id": pid, "lang": lang, "kind": kind, "old": "o", "new": "n"}, score


def _set():
    rows = [
        _pair("e1", "en", "contradiction", 0.9),
        _pair("e2", "en", "contradiction", 0.2),
        _pair("e3", "en", "compatible", 0.8),
        _pair("e4", "en", "compatible", 0.1),
        _pair("f1", "fr", "contradiction", 0.7),
        _pair("f2", "fr", "compatible", 0.3),
    ]
    return [p for p, _ in rows], {p["id"]: s for p, s in rows}


def test_recall_and_false_sets_per_language_alone_and_or_ed_with_the_write_path():
    pairs, scores = _set()
    write_path = {"e1": False, "e2": True, "e3": False, "e4": False, "f1": False, "f2": True}
    result = nli_judge.evaluate(None, pairs, threshold=0.5, scores=scores, write_path=write_path)
    assert result["alone"]["en"] == {
        "contradictions": 2,
        "caught": 1,
        "recall": 0.5,
        "compatible": 2,
        "false_sets": 1,
        "false_set_rate": 0.5,
    }
    assert result["alone"]["fr"]["recall"] == 1.0 and result["alone"]["fr"]["false_sets"] == 0
    assert result["write_path"]["all"]["caught"] == 1 and result["write_path"]["all"]["false_sets"] == 1
    assert result["or_write_path"]["all"]["caught"] == 3  # e1 and f1 by the model, e2 by the write path
    assert result["or_write_path"]["all"]["false_sets"] == 2  # e3 by the model, f2 by the write path


def test_threshold_keeps_false_sets_within_the_rate():
    pairs, scores = _set()
    threshold = nli_judge.threshold_for(pairs, scores, max_false_rate=0.0)
    assert 0.8 < threshold < 0.9  # just above the highest compatible score
    assert nli_judge.evaluate(None, pairs, threshold=threshold, scores=scores)["alone"]["all"]["false_sets"] == 0


def test_write_path_report_is_read_by_pair_id(tmp_path):
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"pairs": [{"id": "a", "outcome": "conflict"}, {"id": "b", "outcome": "duplicate"}]}))
    assert nli_judge.write_path_conflicts(report) == {"a": True, "b": False}


def test_an_absent_model_is_said_not_raised_at_import(capsys):
    name = next(iter(nli_judge.MODELS))
    if nli_judge.available(name):
        judge = nli_judge.NliJudge(name)
        contradiction, compatible = judge.scores(
            [("Bob lives in Munich now.", "Bob lives in Berlin."), ("Bob likes tea.", "Bob lives in Berlin.")]
        )
        assert contradiction > compatible
    else:
        with pytest.raises(nli_judge.ModelUnavailable):
            nli_judge.NliJudge(name)
        assert nli_judge.main(["--model", name]) == 0
        assert "not available here" in capsys.readouterr().out
