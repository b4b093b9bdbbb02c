"""Rule-based entity detection for multi-hop expansion: no NER model, no LLM.

An entity is a capitalised word of three letters or more; sentence-start and other common capitalised
words are not entities, nor are words the query already holds (the first pass has searched for those).
"""

from __future__ import annotations

import re
from collections import Counter

ENTITY_RE = re.compile(r"[A-ZÀ-Ý][a-zà-ÿ]{2,}")

COMMON_CAPITALISED = frozenset(
    w.lower()
    for w in """
    The This That These Those There Then They Their Them She Her His Him Hers Its And But Yes Not For With
    When Where What Who Whom Why How Which While After Before Since Until Also Every Each Some Any All
    Our You Your Was Were Has Had Have Are Mrs Miss Today Yesterday Tomorrow Tonight
    Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April May June July
    August September October November December
    Le La Les Un Une Des Et Ce Cet Cette Ces Il Elle Ils Elles Nous Vous Mais Donc Car Quand Dans Pour Avec
    Sur Sous Après Avant Depuis Pendant Hier Demain Aujourd Son Sa Ses Leur Leurs Mon Ma Mes Ton Ta Tes Notre
    Votre Chez Puis Aussi Tous Toutes Tout Chaque Lundi Mardi Mercredi Jeudi Vendredi Samedi Dimanche
    Janvier Février Mars Avril Mai Juin Juillet Août Septembre Octobre Novembre Décembre Monsieur Madame
    """.split()
)


def extract_entities(texts: list[str], query: str, limit: int, too_common=lambda key: False) -> list[str]:
    """The `limit` most frequent entities across `texts` (ties: first seen first), minus the query's words
    and the names `too_common(lower-cased name)` rejects."""
    query_words = {w.lower() for w in re.findall(r"\w+", query)}
    counts: Counter[str] = Counter()
    first_seen: dict[str, int] = {}
    for text in texts:
        for match in ENTITY_RE.finditer(text):
            word = match.group(0)
            key = word.lower()
            if key in COMMON_CAPITALISED or key in query_words or too_common(key):
                continue
            counts[word] += 1
            first_seen.setdefault(word, len(first_seen))
    ranked = sorted(counts, key=lambda w: (-counts[w], first_seen[w]))
    return ranked[:limit]
