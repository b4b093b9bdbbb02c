"""Calibrate HAKI_RECALL_MAX_DISTANCE for the configured embedder.

The relevance floor drops any candidate whose cosine distance to the query exceeds the threshold. The right
value depends entirely on the embedder: calibrate for the one you run, never reuse a value measured for
another. Three sources of labels:

  --labelled FILE   JSONL: {"query": "...", "relevant": ["fact text", ...], "irrelevant": ["...", ...]}
  --dataset FILE    the quality harness's dataset (eval/dataset.jsonl): a question's gold facts and events
                    are relevant, the scope's other facts and events irrelevant, "no_answer" questions have
                    none relevant
  --locomo FILE     LoCoMo (read in place, e.g. ../shared/data/locomo-dev/locomo-dev.json): a question's gold
                    turns, and the observations citing them, are relevant, the conversation's others irrelevant
  --traces          stored traces: served facts stand in for relevant, excluded ones for irrelevant.
                    Only a proxy (the assembler's own opinion), to watch drift in production.

Prints both distance distributions, a threshold sweep, and the largest threshold-free gain: the threshold
that drops the most irrelevant items while keeping at least --target-recall of the relevant ones.

With --dataset or --locomo, --packing adds what a floor does to a packet under --budget, on the whole scope and on
small scopes (a question's relevant items and randomly drawn others, --small-size items in all; and as many drawn
from the irrelevant ones alone: a small scope that holds no answer). Items are packed by distance, as dense
retrieval would: for each absolute floor (cosine distance) and each relative one (distance beyond the scope's
nearest item plus a margin), the evidence recall it keeps, the relevant items it loses, the irrelevant tokens it
frees and the share of no-answer scopes it empties.

  python scripts/check_recall_floor.py --dataset eval/dataset.jsonl [--embedder sentence-transformers]
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def pairs_from_labelled(path: Path):
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            case = json.loads(line)
            yield case["query"], case.get("relevant", []), case.get("irrelevant", [])


def pairs_from_dataset(path: Path, split: str | None, noise: int = 0, seed: int = 0):
    """With noise, each scope also holds that many background facts (irrelevant), drawn as scripts/eval_recall.py
    draws them."""
    from bench.recall import load_noise, noise_for

    pool = load_noise(path.parent / "noise.jsonl") if noise else {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        scope = json.loads(line)
        if split and scope.get("split") != split:
            continue
        replaced = {f["replaces"] for f in scope["facts"] if f.get("replaces")}
        # facts and episodes alike: the floor applies to both, and "when" questions are answered by events
        texts = {f["id"]: f["text"] for f in scope["facts"] if f["id"] not in replaced}
        texts.update({e["id"]: e["text"] for e in scope.get("events", [])})
        texts.update(noise_for(scope, pool, noise, seed))
        for q in scope["questions"]:
            gold = [texts[g] for g in q["gold"] if g in texts]
            others = [t for item_id, t in texts.items() if item_id not in q["gold"]]
            yield q["text"], gold, others


def pairs_from_locomo(path: Path):
    """(question, relevant, irrelevant) per LoCoMo question over the conversation's turns and observations, texts as
    scripts/eval_locomo.py writes them; an observation is relevant when it cites a gold turn."""
    from bench.locomo import load_conversations

    for conv in load_conversations(path):
        items = [(t.text, {t.dia_id}) for t in conv.turns] + [(o.text, set(o.dia_ids)) for o in conv.observations]
        for q in conv.questions:
            gold = set(q.gold)
            yield (q.text, [text for text, ids in items if ids & gold], [text for text, ids in items if not ids & gold])


def distances_from_traces(project: str | None):
    from traces.models import Decision

    # replays (context/replay.py) may run under other weights or floors: the drift is read from real calls only
    qs = Decision.objects.filter(item_type="fact", cosine_distance__isnull=False, trace__replay_of__isnull=True)
    if project:
        qs = qs.filter(trace__project_id=project)
    relevant = list(qs.filter(decision="included").values_list("cosine_distance", flat=True)[:200000])
    irrelevant = list(qs.filter(decision="excluded").values_list("cosine_distance", flat=True)[:200000])
    return np.array(relevant), np.array(irrelevant), []


def scopes_from_pairs(pairs) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per query: its items' cosine distances, their tokens and which are relevant. Each text embedded once."""
    from hakimem.embeddings import get_embedder
    from hakimem.tokens import estimate_tokens

    embedder = get_embedder()
    cache: dict[str, np.ndarray] = {}

    def vectors(texts):
        new = [t for t in dict.fromkeys(texts) if t not in cache]
        for start in range(0, len(new), 256):
            cache.update(zip(new[start : start + 256], embedder.embed(new[start : start + 256])))
        return np.array([cache[t] for t in texts])

    scopes = []
    for query, rel, irr in pairs:
        texts = rel + irr
        if not texts:
            continue
        # as a context call embeds it: e5 puts "query: " before a question, "passage: " before what is stored
        d = 1.0 - vectors(texts) @ embedder.embed([query], queries=True)[0]
        scopes.append((d, np.array([estimate_tokens(t) for t in texts]), np.arange(len(texts)) < len(rel)))
    return scopes


def distances_from_scopes(scopes):
    relevant = np.concatenate([d[rel] for d, _, rel in scopes])
    irrelevant = np.concatenate([d[~rel] for d, _, rel in scopes])
    # a query with no relevant item empties when its nearest item is over the floor
    empty_queries = [float(d.min()) for d, _, rel in scopes if not rel.any()]
    return relevant, irrelevant, empty_queries


def small_scopes(scopes, size: int, seed: int):
    """Per query: a scope of `size` items holding its relevant ones (the rest drawn from its irrelevant ones), and
    one of `size` irrelevant items alone (a small scope asked what it does not hold)."""
    rng = np.random.default_rng(seed)
    answerable, unanswerable = [], []
    for d, tokens, rel in scopes:
        others = np.flatnonzero(~rel)
        if rel.any() and rel.sum() < size:
            pick = np.concatenate(
                [np.flatnonzero(rel), rng.choice(others, min(size - rel.sum(), len(others)), replace=False)]
            )
            answerable.append((d[pick], tokens[pick], rel[pick]))
        if len(others) >= size:
            pick = rng.choice(others, size, replace=False)
            unanswerable.append((d[pick], tokens[pick], rel[pick]))
    return answerable, unanswerable


def pack(d, tokens, budget: int, keep) -> np.ndarray:
    """The served mask: nearest first, each kept item that still fits."""
    served, used = np.zeros(len(d), dtype=bool), 0
    for i in np.argsort(d, kind="stable"):
        if keep[i] and used + tokens[i] <= budget:
            served[i], used = True, used + tokens[i]
    return served


# Absolute floors (cosine distance) and relative ones (a margin beyond the distance of the scope's nearest item).
FLOORS = {"absolute": np.round(np.arange(0.50, 0.951, 0.05), 3), "relative": np.round(np.arange(0.05, 0.401, 0.05), 3)}


def _share(part: float, whole: float) -> float:
    return part / whole if whole else 0.0


def packing_sweep(answerable, unanswerable, budget: int) -> dict:
    """For each floor: evidence recall (macro over answerable scopes), the share of the relevant items served without
    it that it drops, of the irrelevant tokens served without it that it frees (in answerable scopes, and in no-answer
    ones), and of no-answer scopes it empties."""

    def packets(scopes, rule):
        return [pack(d, tokens, budget, rule(d)) for d, tokens, _ in scopes]

    def recall(served):
        return float(np.mean([(s & rel).sum() / rel.sum() for (_, _, rel), s in zip(answerable, served)]))

    def irrelevant_tokens(scopes, served):
        return sum(int(tokens[s & ~rel].sum()) for (_, tokens, rel), s in zip(scopes, served))

    everything = lambda d: np.ones(len(d), dtype=bool)  # noqa: E731
    base, base_none = packets(answerable, everything), packets(unanswerable, everything)
    relevant_served = sum(int((s & rel).sum()) for (_, _, rel), s in zip(answerable, base))
    rows = {
        "recall_without": recall(base),
        "scopes": len(answerable),
        "no_answer_scopes": len(unanswerable),
        "floors": [],
    }
    for kind, values in FLOORS.items():
        for value in values:
            rule = (lambda d, v=value: d <= v) if kind == "absolute" else (lambda d, v=value: d <= d.min() + v)
            served, served_none = packets(answerable, rule), packets(unanswerable, rule)
            lost = sum(int((b & rel & ~s).sum()) for (_, _, rel), b, s in zip(answerable, base, served))
            rows["floors"].append(
                {
                    "kind": kind,
                    "floor": float(value),
                    "recall": recall(served),
                    "relevant_lost": _share(lost, relevant_served),
                    "irrelevant_freed": 1
                    - _share(irrelevant_tokens(answerable, served), irrelevant_tokens(answerable, base)),
                    "no_answer_freed": 1
                    - _share(irrelevant_tokens(unanswerable, served_none), irrelevant_tokens(unanswerable, base_none))
                    if unanswerable
                    else 0.0,
                    "no_answer_emptied": float(np.mean([not s.any() for s in served_none]))
                    if served_none
                    else float("nan"),
                }
            )
    return rows


def format_packing(name: str, rows: dict) -> str:
    lines = [
        f"\n{name}: {rows['scopes']} answerable scopes (recall without a floor {rows['recall_without']:.3f}), "
        f"{rows['no_answer_scopes']} with no answer",
        "  floor            recall  relevant lost  irrelevant tokens freed  no-answer: tokens freed  emptied",
    ]
    for r in rows["floors"]:
        label = f"{r['floor']:.2f}" if r["kind"] == "absolute" else f"best+{r['floor']:.2f}"
        lines.append(
            f"  {label:14}  {r['recall']:6.3f}  {r['relevant_lost']:13.3f}  {r['irrelevant_freed']:23.3f}  "
            f"{r['no_answer_freed']:23.3f}  {r['no_answer_emptied']:7.3f}"
        )
    return "\n".join(lines)


def sweep(relevant, irrelevant, empty_queries, target):
    rows, best = [], None
    for t in np.arange(0.20, 1.01, 0.025):
        kept = float((relevant <= t).mean()) if len(relevant) else float("nan")
        dropped = float((irrelevant > t).mean()) if len(irrelevant) else float("nan")
        emptied = float(np.mean([m > t for m in empty_queries])) if empty_queries else float("nan")
        rows.append((round(float(t), 3), kept, dropped, emptied))
        if kept >= target and (best is None or dropped > best[2]):
            best = rows[-1]
    return rows, best


def calibrate(
    *,
    labelled: Path | None,
    dataset: Path | None,
    traces: bool,
    split: str | None,
    project: str | None,
    embedder: str | None,
    target_recall: float,
    json_path: Path | None,
    locomo: Path | None = None,
    noise: int = 0,
    packing: bool = False,
    budget: int = 900,
    small_size: int = 10,
    seed: int = 0,
) -> int:
    """Prints the distances, the sweep and the suggested floor; writes the figures to json_path if given.
    Django must be set up."""
    from django.conf import settings

    if embedder:
        settings.HAKI_EMBED_PROVIDER = embedder
    scopes = []
    if traces:
        relevant, irrelevant, empties = distances_from_traces(project)
    else:
        if labelled:
            pairs = pairs_from_labelled(labelled)
        elif locomo:
            pairs = pairs_from_locomo(locomo)
        else:
            pairs = pairs_from_dataset(dataset, split, noise=noise, seed=seed)
        scopes = scopes_from_pairs(pairs)
        relevant, irrelevant, empties = distances_from_scopes(scopes)

    print(
        f"embedder: {settings.HAKI_EMBED_PROVIDER}; relevant items {len(relevant)}, irrelevant {len(irrelevant)}, "
        f"queries with no relevant item {len(empties)}"
    )
    for name, values in (("relevant", relevant), ("irrelevant", irrelevant)):
        if len(values):
            p = np.percentile(values, [5, 25, 50, 75, 95])
            print(f"  {name:10} distance p5 {p[0]:.3f}  p25 {p[1]:.3f}  p50 {p[2]:.3f}  p75 {p[3]:.3f}  p95 {p[4]:.3f}")
    if not len(relevant) or not len(irrelevant):
        print("\nnot enough items to calibrate: both relevant and irrelevant distances are needed")
        return 1
    rows, best = sweep(relevant, irrelevant, empties, target_recall)
    print("\n  threshold  relevant kept  irrelevant dropped  no-answer calls emptied")
    for t, kept, dropped, emptied in rows:
        print(f"  {t:9.3f}  {kept:13.3f}  {dropped:18.3f}  {emptied:23.3f}")
    if best:
        emptied = f", empties {best[3]:.1%} of no-answer calls" if empties else ""
        print(
            f"\nsuggested HAKI_RECALL_MAX_DISTANCE={best[0]} for {settings.HAKI_EMBED_PROVIDER}: keeps {best[1]:.1%} of "
            f"relevant items, drops {best[2]:.1%} of irrelevant ones{emptied}"
        )
    else:
        print(f"\nno threshold keeps {target_recall:.0%} of relevant items: leave the floor off")
    figures = {"embedder": settings.HAKI_EMBED_PROVIDER, "suggested": best, "sweep": rows}
    if packing and scopes:
        answerable, unanswerable = small_scopes(scopes, small_size, seed)
        figures["packing"] = {
            "whole scope": packing_sweep(
                [s for s in scopes if s[2].any()], [s for s in scopes if not s[2].any()], budget
            ),
            f"small scopes ({small_size} items)": packing_sweep(answerable, unanswerable, budget),
        }
        for name, rows_ in figures["packing"].items():
            print(format_packing(f"{name}, budget {budget}", rows_))
    if json_path:
        json_path.write_text(json.dumps(figures, indent=1))
    return 0
