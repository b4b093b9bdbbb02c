"""The baselines both quality harnesses (bench/recall.py, bench/locomo.py) rank the same items
with: Okapi BM25, reciprocal-rank fusion, and greedy packing under a token budget. Plain numpy, no service."""

from __future__ import annotations

import math
import re
from collections import Counter

import numpy as np

BM25_K1 = 1.2
BM25_B = 0.75
RRF_K = 60

_WORD_RE = re.compile(r"\w+", re.UNICODE)


def bm25_tokens(text: str, stop_words) -> list[str]:
    return [w for w in _WORD_RE.findall(text.lower()) if w not in stop_words]


class BM25:
    """Okapi BM25 over one scope's items; idf = ln(1 + (N - n + 0.5) / (n + 0.5)), never negative."""

    def __init__(self, docs: list[list[str]], k1: float = BM25_K1, b: float = BM25_B):
        self.k1, self.b = k1, b
        self.tf = [Counter(d) for d in docs]
        self.len = np.array([len(d) for d in docs], dtype=np.float64)
        self.avgdl = float(self.len.mean()) if len(docs) and self.len.mean() > 0 else 1.0
        n = len(docs)
        df = Counter(term for d in self.tf for term in d)
        self.idf = {t: math.log(1.0 + (n - c + 0.5) / (c + 0.5)) for t, c in df.items()}

    def scores(self, query: list[str]) -> np.ndarray:
        out = np.zeros(len(self.tf), dtype=np.float64)
        norm = self.k1 * (1.0 - self.b + self.b * self.len / self.avgdl)
        for term in dict.fromkeys(query):  # each distinct query word once
            idf = self.idf.get(term)
            if idf is None:
                continue
            tf = np.array([d.get(term, 0) for d in self.tf], dtype=np.float64)
            out += idf * tf * (self.k1 + 1.0) / (tf + norm)
        return out


def order_by_score(scores: np.ndarray, *, positive_only: bool = False) -> list[int]:
    """Indexes by descending score, ties in item order; a lexical ranking holds only items that match."""
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    return [i for i in order if scores[i] > 0] if positive_only else order


def rrf(rankings: list[list[int]], n_items: int, k: int = RRF_K) -> list[int]:
    fused = np.zeros(n_items, dtype=np.float64)
    for ranking in rankings:
        for position, i in enumerate(ranking, start=1):
            fused[i] += 1.0 / (k + position)
    return order_by_score(fused)


def pack(ranking: list, tokens: dict, budget: int) -> tuple[list, int]:
    """Greedy in rank order, as the assembler packs: an item that does not fit is skipped and smaller ones
    after it may still fit. Returns the items served and the tokens used."""
    served, used = [], 0
    for item in ranking:
        if used + tokens[item] <= budget:
            served.append(item)
            used += tokens[item]
    return served, used
