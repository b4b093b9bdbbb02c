"""How a new fact relates to a stored one of its scope: conflict, duplicate or distinct. The write path asks it of
each new fact and its nearest neighbours, consolidation of every near-duplicate pair."""

from __future__ import annotations

from facts.text import Signal, Statement, adds_information, analyse, contradiction_signal
from hakimem.embeddings import thresholds


CONFLICT, DUPLICATE, DISTINCT = "conflict", "duplicate", "distinct"


def pair_verdict(new_text: str | Statement, old_text: str | Statement, similarity: float) -> tuple[str, Signal | None]:
    """How a new fact relates to a stored one of the same scope:
    - conflict: their claims give one holder two values of one attribute (facts.claims), or one is the other
      negated (the same content words), at any similarity from the claims' floor up; or similar enough to be about
      the same thing (the conflict threshold) and another word rule fires;
    - duplicate: no contradiction, from the duplicate threshold up, and the new text names nothing new;
    - distinct: anything else (stored as its own fact).
    The thresholds are the configured embedder's (hakimem.embeddings.thresholds)."""
    limits = thresholds()
    if not similarity >= limits.claim_min_similarity:  # NaN too: a vector cosine cannot rank
        return DISTINCT, None
    signal = contradiction_signal(new_text, old_text)
    if signal is not None and (signal.structural or similarity >= limits.conflict_min_similarity):
        return CONFLICT, signal
    if similarity < limits.conflict_min_similarity:
        return DISTINCT, None
    if similarity >= limits.duplicate_similarity and not adds_information(new_text, old_text):
        return DUPLICATE, None
    return DISTINCT, None


Candidate = tuple[object, str, float]  # (fact id, text, similarity)


class Statements:
    """Each text of a batch analysed once for the contradiction rules (facts.text.analyse), however many texts
    it is compared with; held for the batch only."""

    def __init__(self):
        self._by_text: dict[str, Statement] = {}

    def __call__(self, text: str) -> Statement:
        statement = self._by_text.get(text)
        if statement is None:
            statement = self._by_text[text] = analyse(text)
        return statement
