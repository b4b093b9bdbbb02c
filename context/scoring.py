"""The hybrid score and the token estimate.

The weights are documented here and are not part of the API contract: they may change between releases
(after a measured improvement on the quality harness, see docs/quality.md) without a breaking change.

    score = W_SIMILARITY * (1 - cosine_distance) + W_TEXT * text_rank + W_RECENCY * exp(-Δt / τ)

- text_rank is the share of the query's information a candidate holds: the sum of the weights of the query's
  informative words it contains, each weighted by log(1 / share of rows holding it) and normalised to sum 1
  (context/retrieval_sql.py, text_rank_sql): in [0, 1] like the other two parts.
- Δt = now - coalesce(valid_from, recorded_from) for facts, now - occurred_at for episodes; τ = TAU_DAYS.
- On the degraded path (no usable query vector) the similarity part is absent and the other two rank.
"""

from __future__ import annotations

import heapq

from facts.text import leading_stamp
from hakimem.tokens import estimate_tokens  # noqa: F401 (the assembler and the scripts import it from here)

# Tuned on the quality harness's dev split: recency weighs less than the specification's 0.15, or an event of a year
# ago loses to any fact written today (docs/quality.md, "Current results and the tuning behind them").
W_SIMILARITY = 0.60
W_TEXT = 0.25
W_RECENCY = 0.05
TAU_DAYS = 30.0
TAU_SECONDS = TAU_DAYS * 86400.0

# Seed 003's further two signals, for tiered calls only (a plain call ranks as seed 000 says):
#     score_tiered = score + W_IMPORTANCE * importance + W_ACCESS * access
# importance in [0, 1] as written (default 0.5; episodes, which carry none, count as NEUTRAL_IMPORTANCE) and access
# in [0, 1], how often the item was served lately (traces.selectors). Relevance dominates; these two decide among
# candidates that relevance leaves close, which in a dense store is often. Like the three above they are named
# constants: change them only with a run of the quality harness and of scripts/bench.py (docs/quality.md).
W_IMPORTANCE = 0.10
W_ACCESS = 0.05
NEUTRAL_IMPORTANCE = 0.5

# Episodes of the sitting of the call's best episodes: within SAME_SITTING_HOURS of one of its SAME_SITTING_TOP best
# by score, an episode's score is multiplied by 1 + W_SAME_SITTING. A chat stored turn by turn keeps much of a
# question's evidence in the turns around its best hits, which share few words with it (LoCoMo dev, docs/quality.md).
W_SAME_SITTING = 0.10
SAME_SITTING_TOP = 3
SAME_SITTING_SECONDS = 12 * 3600

# Facts of the sitting of the call's best facts. A fact has no time of its own but when it was written (a chat written
# in one batch is written at one moment), yet a chat's turns stored as facts open with when they were said, a bracketed
# stamp ("[1:56 pm on 8 May, 2023] Caroline: ...", facts.text.leading_stamp): the facts whose stamp is that of one of
# the SAME_SITTING_TOP best facts by score have their score multiplied by 1 + W_SAME_STAMP (LoCoMo dev, docs/quality.md).
W_SAME_STAMP = 0.10


def hybrid_score(similarity: float | None, text_rank: float, recency: float, config=None) -> float:
    """config: a context.config.AssemblyConfig whose weights replace the constants (a replay's overrides)."""
    w_sim, w_text, w_rec = (
        (config.w_similarity, config.w_text_rank, config.w_recency) if config else (W_SIMILARITY, W_TEXT, W_RECENCY)
    )
    score = w_text * text_rank + w_rec * recency
    if similarity is not None:
        score += w_sim * similarity
    return score


def tiered_score(base: float, importance: float | None, access: float, config=None) -> float:
    """A tiered call's five-signal score from the three-signal `base` (hybrid_score)."""
    w_imp, w_acc = (config.w_importance, config.w_access) if config else (W_IMPORTANCE, W_ACCESS)
    return base + w_imp * (NEUTRAL_IMPORTANCE if importance is None else importance) + w_acc * access


def same_sitting_lift(episodes: list, config=None) -> None:
    """Lift, in place, the scored `episodes` that occurred within SAME_SITTING_SECONDS of one of the
    SAME_SITTING_TOP best of them (those included)."""
    lift = config.w_same_sitting if config else W_SAME_SITTING
    if not lift or not episodes:
        return
    best = heapq.nsmallest(SAME_SITTING_TOP, episodes, key=rank_order)
    for episode in episodes:
        if any(abs((episode.occurred_at - b.occurred_at).total_seconds()) <= SAME_SITTING_SECONDS for b in best):
            episode.score *= 1 + lift


def same_stamp_lift(facts: list, config=None) -> None:
    """Lift, in place, the scored `facts` whose text opens with the stamp of one of the SAME_SITTING_TOP best of them
    (those included)."""
    lift = config.w_same_stamp if config else W_SAME_STAMP
    if not lift or not facts:
        return
    stamps = {leading_stamp(f.text) for f in heapq.nsmallest(SAME_SITTING_TOP, facts, key=rank_order)} - {""}
    if not stamps:
        return
    for fact in facts:
        if leading_stamp(fact.text) in stamps:
            fact.score *= 1 + lift


def rank_order(item) -> tuple:
    """Where an item of a call's ranking goes: best score first; of equal scores, the more recent, then by text, then
    by id. Each is what an export and import keep (facts/transfer.py), so a copy of a scope ranks as the original,
    whichever order its rows were written in. The retrieval SQL orders alike (retrieval._BY_HYBRID_SCORE: text in
    COLLATE "C", the order of Python's str)."""
    return -item.score, -item.recency, item.text, str(item.id)
