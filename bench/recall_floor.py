"""Calibrate HAKI_RECALL_MAX_DISTANCE for the configured embedder.

The relevance floor drops any candidate whose cosine distance to the query exceeds the threshold. The right
value depends entirely on the embedder: calibrate for the one you run, never reuse a value measured for
another. Three sources of labels:

  --labelled FILE   JSONL: {"query": "...", "relevant": ["fact text", ...], "irrelevant": ["...", ...]}
  --dataset FILE    the quality harness's dataset (eval/dataset.jsonl): a question's gold facts and events
                    are relevant, the scope's other facts and events irrelevant, "no_answer" questions have
                    none relevant
  --traces          stored traces: served facts stand in for relevant, excluded ones for irrelevant.
                    Only a proxy (the assembler's own opinion), to watch drift in production.

Prints both distance distributions, a threshold sweep, and the largest threshold-free gain: the threshold
that drops the most irrelevant items while keeping at least --target-recall of the relevant ones.

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


def pairs_from_dataset(path: Path, split: str | None):
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
        for q in scope["questions"]:
            gold = [texts[g] for g in q["gold"] if g in texts]
            others = [t for item_id, t in texts.items() if item_id not in q["gold"]]
            yield q["text"], gold, others


def distances_from_traces(project: str | None):
    from traces.models import Decision

    # replays (context/replay.py) may run under other weights or floors: the drift is read from real calls only
    qs = Decision.objects.filter(item_type="fact", cosine_distance__isnull=False, trace__replay_of__isnull=True)
    if project:
        qs = qs.filter(trace__project_id=project)
    relevant = list(qs.filter(decision="included").values_list("cosine_distance", flat=True)[:200000])
    irrelevant = list(qs.filter(decision="excluded").values_list("cosine_distance", flat=True)[:200000])
    return np.array(relevant), np.array(irrelevant), []


def distances_from_pairs(pairs):
    from hakimem.embeddings import get_embedder

    embedder = get_embedder()
    relevant, irrelevant, empty_queries = [], [], []
    for query, rel, irr in pairs:
        q = embedder.embed([query])[0]
        vectors = embedder.embed(rel + irr) if rel or irr else np.zeros((0, len(q)))
        d = 1.0 - vectors @ q
        relevant += d[: len(rel)].tolist()
        irrelevant += d[len(rel):].tolist()
        if not rel and irr:
            empty_queries.append(float(d.min()))  # the call empties when its nearest item is over the floor
    return np.array(relevant), np.array(irrelevant), empty_queries


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


def calibrate(*, labelled: Path | None, dataset: Path | None, traces: bool, split: str | None, project: str | None,
              embedder: str | None, target_recall: float, json_path: Path | None) -> int:
    """Prints the distances, the sweep and the suggested floor; writes the figures to json_path if given.
    Django must be set up."""
    from django.conf import settings

    if embedder:
        settings.HAKI_EMBED_PROVIDER = embedder
    if traces:
        relevant, irrelevant, empties = distances_from_traces(project)
    elif labelled:
        relevant, irrelevant, empties = distances_from_pairs(pairs_from_labelled(labelled))
    else:
        relevant, irrelevant, empties = distances_from_pairs(pairs_from_dataset(dataset, split))

    print(f"embedder: {settings.HAKI_EMBED_PROVIDER}; relevant items {len(relevant)}, irrelevant {len(irrelevant)}, "
          f"queries with no relevant item {len(empties)}")
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
        print(f"\nsuggested HAKI_RECALL_MAX_DISTANCE={best[0]} for {settings.HAKI_EMBED_PROVIDER}: keeps {best[1]:.1%} of "
              f"relevant items, drops {best[2]:.1%} of irrelevant ones{emptied}")
    else:
        print(f"\nno threshold keeps {target_recall:.0%} of relevant items: leave the floor off")
    if json_path:
        json_path.write_text(json.dumps({"embedder": settings.HAKI_EMBED_PROVIDER, "suggested": best, "sweep": rows}, indent=1))
    return 0
