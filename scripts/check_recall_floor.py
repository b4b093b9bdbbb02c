#!/usr/bin/env python
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

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from scripts._django import setup  # noqa: E402


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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--labelled", type=Path)
    source.add_argument("--dataset", type=Path)
    source.add_argument("--traces", action="store_true")
    parser.add_argument("--split", help="dataset split to use (dev by default: tune on dev, report held-out)", default="dev")
    parser.add_argument("--project", help="with --traces: one project only")
    parser.add_argument("--embedder", help="override HAKI_EMBED_PROVIDER for this run")
    parser.add_argument("--target-recall", type=float, default=0.95)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)

    setup()
    from django.conf import settings

    if args.embedder:
        settings.HAKI_EMBED_PROVIDER = args.embedder
    if args.traces:
        relevant, irrelevant, empties = distances_from_traces(args.project)
    elif args.labelled:
        relevant, irrelevant, empties = distances_from_pairs(pairs_from_labelled(args.labelled))
    else:
        relevant, irrelevant, empties = distances_from_pairs(pairs_from_dataset(args.dataset, args.split))

    print(f"embedder: {settings.HAKI_EMBED_PROVIDER}; relevant items {len(relevant)}, irrelevant {len(irrelevant)}, "
          f"queries with no relevant item {len(empties)}")
    for name, values in (("relevant", relevant), ("irrelevant", irrelevant)):
        if len(values):
            p = np.percentile(values, [5, 25, 50, 75, 95])
            print(f"  {name:10} distance p5 {p[0]:.3f}  p25 {p[1]:.3f}  p50 {p[2]:.3f}  p75 {p[3]:.3f}  p95 {p[4]:.3f}")
    if not len(relevant) or not len(irrelevant):
        print("\nnot enough items to calibrate: both relevant and irrelevant distances are needed")
        return 1
    rows, best = sweep(relevant, irrelevant, empties, args.target_recall)
    print("\n  threshold  relevant kept  irrelevant dropped  no-answer calls emptied")
    for t, kept, dropped, emptied in rows:
        print(f"  {t:9.3f}  {kept:13.3f}  {dropped:18.3f}  {emptied:23.3f}")
    if best:
        emptied = f", empties {best[3]:.1%} of no-answer calls" if empties else ""
        print(f"\nsuggested HAKI_RECALL_MAX_DISTANCE={best[0]} for {settings.HAKI_EMBED_PROVIDER}: keeps {best[1]:.1%} of "
              f"relevant items, drops {best[2]:.1%} of irrelevant ones{emptied}")
    else:
        print(f"\nno threshold keeps {args.target_recall:.0%} of relevant items: leave the floor off")
    if args.json:
        args.json.write_text(json.dumps({"embedder": settings.HAKI_EMBED_PROVIDER, "suggested": best, "sweep": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
