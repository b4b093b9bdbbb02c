#!/usr/bin/env python3
"""Build pairs.jsonl, the labelled contradiction set, from the hand-written sources in src/.

    python3 eval/contradictions/build.py          # writes pairs.jsonl and prints the counts

Source format (src/en.txt, src/fr.txt): a header "@ <kind> <category>" opens a group, then one pair a line,
"<style> | <old fact> | <new fact>", style p (plain), x (extractor) or c (chat); "#" starts a comment.

Ids are "<lang>-<category code>-<nn>", numbered in source order. The split is drawn per (kind, lang): a shuffle
seeded by SEED, then grouped by category (stable), then dev and test alternately along that order, so each
(kind, lang) and each category of it is cut in two halves (the odd pair of a category goes to either side).
"""

from __future__ import annotations

import json
import random
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE / "src"
OUT = HERE / "pairs.jsonl"
SEED = 20240917
LANGS = ("en", "fr")
STYLES = {"p": "plain", "x": "extractor", "c": "chat"}
CATEGORIES = {
    "contradiction": {
        "residence": "res",
        "employer": "emp",
        "occupation": "job",
        "age": "age",
        "birth_date": "bdate",
        "birthplace": "bplace",
        "partner": "partner",
        "marital_status": "marital",
        "children_count": "kids",
        "pets_count": "pets",
        "preference_reversed": "pref",
        "habit_negated": "habit",
        "favourite_changed": "fav",
        "nationality": "nat",
        "diet": "diet",
        "allergy": "allergy",
        "education": "edu",
        "schedule": "sched",
        "vehicle": "car",
    },
    "compatible": {
        "more_specific": "spec",
        "additive": "add",
        "other_person": "person",
        "other_attribute": "attr",
        "paraphrase": "para",
        "past_vs_present": "past",
        "separate_events": "event",
        "related_consistent": "related",
        "near_miss": "near",
    },
}
FIELDS = ("id", "lang", "kind", "category", "style", "split", "old", "new")


def parse(lang: str) -> list[dict]:
    path = SRC / f"{lang}.txt"
    pairs, kind, category, numbers = [], None, None, Counter()
    for ln, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.strip()
        where = f"{path.name}:{ln}"
        if not line or line.startswith("#"):
            continue
        if line.startswith("@"):
            _, kind, category = line.split()
            if category not in CATEGORIES.get(kind, {}):
                raise ValueError(f"{where}: unknown kind/category {kind} {category}")
            continue
        parts = [p.strip() for p in line.split("|")]
        if kind is None or len(parts) != 3 or parts[0] not in STYLES or not parts[1] or not parts[2]:
            raise ValueError(f"{where}: expected '<p|x|c> | old | new' under a header: {line!r}")
        style, old, new = parts
        if old == new:
            raise ValueError(f"{where}: old and new are the same text")
        code = CATEGORIES[kind][category]
        numbers[code] += 1
        pairs.append(
            {
                "id": f"{lang}-{code}-{numbers[code]:02d}",
                "lang": lang,
                "kind": kind,
                "category": category,
                "style": STYLES[style],
                "split": None,
                "old": old,
                "new": new,
            }
        )
    return pairs


def assign_splits(pairs: list[dict]) -> None:
    groups = defaultdict(list)
    for pair in pairs:
        groups[(pair["kind"], pair["lang"])].append(pair)
    for key in sorted(groups):
        group = groups[key]
        random.Random(f"{SEED}:{key[0]}:{key[1]}").shuffle(group)
        group.sort(key=lambda p: p["category"])  # stable: the shuffled order within each category stays
        for i, pair in enumerate(group):
            pair["split"] = "dev" if i % 2 == 0 else "test"


def build() -> list[dict]:
    pairs = [p for lang in LANGS for p in parse(lang)]
    ids = Counter(p["id"] for p in pairs)
    texts = Counter((p["old"], p["new"]) for p in pairs)
    if max(ids.values()) > 1 or max(texts.values()) > 1:
        raise ValueError("duplicate ids or pairs")
    assign_splits(pairs)
    return pairs


def counts_table(pairs: list[dict]) -> str:
    rows = Counter((p["kind"], p["category"], p["lang"]) for p in pairs)
    lines = ["| kind | category | en | fr | all |", "|---|---|---|---|---|"]
    for kind, categories in CATEGORIES.items():
        for category in categories:
            en, fr = rows[(kind, category, "en")], rows[(kind, category, "fr")]
            lines.append(f"| {kind} | {category} | {en} | {fr} | {en + fr} |")
    return "\n".join(lines)


def main() -> None:
    pairs = build()
    with OUT.open("w", encoding="utf-8") as out:
        for pair in pairs:
            out.write(json.dumps({k: pair[k] for k in FIELDS}, ensure_ascii=False) + "\n")
    by = Counter((p["kind"], p["lang"], p["split"]) for p in pairs)
    styles = Counter((p["lang"], p["style"]) for p in pairs)
    print(f"{len(pairs)} pairs -> {OUT.relative_to(HERE.parent.parent)}")
    for kind in CATEGORIES:
        for lang in LANGS:
            print(f"  {kind:13} {lang}: dev {by[(kind, lang, 'dev')]:3}  test {by[(kind, lang, 'test')]:3}")
    print("  styles: " + ", ".join(f"{lang}/{s} {n}" for (lang, s), n in sorted(styles.items())))
    print(counts_table(pairs))


if __name__ == "__main__":
    main()
