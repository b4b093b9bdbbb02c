"""The claim reader's cues (facts.claims.cues): a sentence is searched only with the patterns whose cues it holds,
which must never change what is read. Checked on the contradiction set's texts and on text whose case folds are
the odd ones IGNORECASE matches."""

import json
import re
from pathlib import Path

import pytest

from facts.claims import reader
from facts.claims.cues import CueFinder, pattern_cues
from facts.claims.patterns import _PATTERNS

PAIRS = Path(__file__).resolve().parents[2] / "eval" / "contradictions" / "pairs.jsonl"


def _texts() -> list[str]:
    texts = []
    for line in PAIRS.read_text().splitlines():
        if line.strip():
            pair = json.loads(line)
            texts += [pair["old"], pair["new"]]
    return texts


def _odd_case(text: str) -> str:
    """Letters IGNORECASE matches to ASCII ones that lower() does not give: the dotless i and the long s."""
    return text.upper().replace("S", "ſ").replace("K", "K").replace("I", "ı")


def test_every_match_of_a_pattern_holds_one_of_its_cues():
    # given every pattern's cues and the contradiction set's texts (and their odd-case forms)
    texts = _texts()
    texts += [_odd_case(t) for t in texts]
    matched = 0
    for _, _, pattern in _PATTERNS:
        cues = pattern_cues(pattern)
        for text in texts:
            for match in pattern.finditer(text):
                matched += 1
                # then the matched text holds one of them, as the finder sees it
                assert cues is None or CueFinder(cues)(match.group(0)), (pattern.pattern[:80], match.group(0))
    assert matched > 500


def test_the_finder_finds_every_cue_a_sentence_holds():
    cues = ["is", "is now", "is still", "married", "married to", "at", "egan", "a", "né"]
    finder = CueFinder(cues)
    for sentence in ["She is now married to Tom.", "Il est né à Nantes.", "Vegans eat at home", "Nothing here"]:
        folded = sentence.lower()
        assert finder(sentence) == {c for c in cues if c in folded}
    assert finder("HE İS MARRİED") == {"is", "married", "a"}


def test_a_pattern_without_a_literal_has_no_cues():
    assert pattern_cues(re.compile(r"\b[A-Z]\w+\s+\d+")) is None
    assert pattern_cues(re.compile(r"(?:lives|moved)?\s*in\s+\w+")) == frozenset(["in"])
    assert pattern_cues(re.compile(r"(?:lives|moved)\s+(?:to|in)", re.I)) == frozenset(["lives", "moved"])


@pytest.mark.parametrize("odd", [False, True])
def test_reading_with_cues_reads_what_every_pattern_reads(monkeypatch, odd):
    # given the contradiction set's texts, read with the cues and then with every pattern run on every sentence
    texts = _texts()
    if odd:
        texts = [_odd_case(t) for t in texts]
    with_cues = [reader.read.__wrapped__(text) for text in texts]
    monkeypatch.setattr(reader, "_CUED_PATTERNS", [(a, k, p, None) for a, k, p, _ in reader._CUED_PATTERNS])
    without = [reader.read.__wrapped__(text) for text in texts]
    # then every text gives the same claims
    assert with_cues == without
    assert sum(map(len, with_cues)) > 100 or odd


def test_a_word_in_an_odd_case_is_read_as_its_plain_spelling():
    """The patterns match a dotless ı or a long ſ as i and s (IGNORECASE); the word tables must know the word too."""

    def read(text):
        return [(c.holder, c.attribute, c.value) for c in reader.read.__wrapped__(text)]

    assert read("Tom's chıldren go to school ın Rennes.") == read("Tom's children go to school in Rennes.") != []
    assert read("Tom haſ two ſiſters.") == read("Tom has two sisters.") != []
