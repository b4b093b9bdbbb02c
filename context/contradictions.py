"""Query-time contradictions: among a call's fact candidates, pairs that cannot both be true. The newer of each
pair wins for this call; the older is left out with reason code superseded_in_context, and the pair is
proposed to curators (facts.conflicts.contradiction_propose) or, under newest_wins, superseded for good by the
next consolidation (context/consolidation.py).

A pair is a candidate when the claims of its facts clash (facts.claims: one holder, one attribute, two values),
at any similarity from the claims' floor up, or when its stored vectors are at least the conflict threshold alike
(the embedder's, hakimem.embeddings.thresholds: MiniLM's 0.75), with no upper bound: the band [0.75, 0.92] of the
specification would miss negations, which MiniLM scores above 0.95 ("Clara speaks Spanish." / "Clara does not speak
Spanish." 0.96).
facts.text.contradiction_signal, the write path's rules, says whether a pair disagrees.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from context import retrieval
from facts.claims import clash, read as read_claims
from facts.text import analyse, contradiction_signal
from hakimem.embeddings import thresholds


# What the rules read of a text (facts.text.analyse: ~0.2 ms for a chat turn of 150 characters, the larger part of
# a call's detection on a chat scope) kept per process: a scope's candidates come back from call to call. Keyed by
# the text itself, so an edited fact is read again; 4,096 statements of a few kB each.
STATEMENT_CACHE_SIZE = 4096


@functools.lru_cache(maxsize=STATEMENT_CACHE_SIZE)
def _statement(text: str):
    return analyse(text)


@dataclass(frozen=True)
class Contradiction:
    winner_id: object  # the newer fact, served if it fits
    loser_id: object  # the older one, left out of this call (superseded_in_context)
    similarity: float
    rule: str  # facts.text.Signal.rule: negation | antonym | different_number | different_date | different_name
    detail: str


def _newness(candidate) -> tuple:
    """Which of two facts is the newer: the time it holds from (valid_from, else when it was recorded), then
    when it was recorded, then its id so that the order is total."""
    return (candidate.valid_from or candidate.recorded_from, candidate.recorded_from, str(candidate.id))


def _claimed_pairs(considered: list) -> list[tuple]:
    """The pairs of candidates whose claims clash (facts.claims), found by grouping the claims by attribute: no
    pair of candidates that share none is compared (clash checks the holders)."""
    by_key: dict = {}
    for candidate in considered:
        for claim in read_claims(candidate.text):  # cached per text; the word rules' reading only for the pairs
            by_key.setdefault(claim.attribute, []).append((candidate.id, claim))
    pairs = set()
    for group in by_key.values():
        for i, (a, claim_a) in enumerate(group):
            for b, claim_b in group[i + 1 :]:
                if a != b and clash(claim_a, claim_b) is not None:
                    pairs.add((a, b) if str(a) < str(b) else (b, a))
    return sorted(pairs, key=lambda p: (str(p[0]), str(p[1])))


def find_contradictions(*, project_id: str, subject_id: str, candidates: list) -> list[Contradiction]:
    """The contradicting pairs among the first CONTRADICTION_MAX_CANDIDATES of `candidates` (context.retrieval
    Candidate, best ranked first), of their CONTRADICTION_MAX_PAIRS most alike pairs, whose winner stays in: one Contradiction per (winner, loser), the losers'
    pairs most similar first. A fact that loses to any fact still in is out.

    Pass the facts that may be served (not blocked): a blocked fact should neither win nor lose.

    Decided newest first, so that a fact already out supersedes nothing: with A older than B older than C, where
    C contradicts B and B contradicts A but A and C agree ("Paul lives in Nantes.", "Paul lives in Bordeaux.",
    "Paul does not live in Bordeaux."), C wins over B and A stays; removing A for a fact this very call does not serve would lose it for nothing.
    One statement (context.retrieval.similar_pairs), then the rules on the pairs above the threshold only."""
    considered = candidates[: retrieval.CONTRADICTION_MAX_CANDIDATES]
    by_id = {c.id: c for c in considered}
    limits = thresholds()
    pairs = retrieval.similar_pairs(
        project_id=project_id,
        subject_id=subject_id,
        ids=list(by_id),
        min_similarity=limits.conflict_min_similarity,
        claimed=_claimed_pairs(considered),
    )
    if not pairs:
        return []
    against: dict = {}  # older fact id -> [(newer id, similarity, signal)]
    for a, b, similarity in pairs:
        newer, older = (a, b) if _newness(by_id[a]) > _newness(by_id[b]) else (b, a)
        signal = contradiction_signal(_statement(by_id[newer].text), _statement(by_id[older].text))
        if signal is None or not similarity >= limits.claim_min_similarity:  # NaN: a vector of zeros
            continue
        if signal.structural or similarity >= limits.conflict_min_similarity:
            against.setdefault(older, []).append((newer, similarity, signal))

    out: set = set()
    found: list[Contradiction] = []
    for fact_id in sorted(against, key=lambda i: _newness(by_id[i]), reverse=True):
        # Every fact this one loses to is newer, so already decided: only those still in count.
        winners = sorted((w for w in against[fact_id] if w[0] not in out), key=lambda w: (-w[1], str(w[0])))
        if winners:
            out.add(fact_id)
            found += [
                Contradiction(winner_id=w, loser_id=fact_id, similarity=s, rule=sig.rule, detail=sig.detail)
                for w, s, sig in winners
            ]
    return found


def losers(contradictions: list[Contradiction]) -> dict:
    """Each fact left out, with the contradiction that names its winner for the trace (the most similar of its
    winners): {loser id: Contradiction}."""
    first: dict = {}
    for contradiction in contradictions:
        first.setdefault(contradiction.loser_id, contradiction)
    return first
