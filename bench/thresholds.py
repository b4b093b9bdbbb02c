"""Carry MiniLM's thresholds (hakimem.embeddings.THRESHOLDS) to another embedder, on development data only.

A cosine means something only within the embedder that made it (two unrelated facts: 0.09 with MiniLM, 0.79 with
e5), so a threshold is carried by what it does, not by its value: the other embedder's threshold lets through the
same share of the same population as MiniLM's does.

- The conflict and duplicate thresholds keep a word rule, or a de-duplication, from pairs that are not about the
  same thing: they are carried on the pairs of facts of one scope, as the write path meets them: the EN/FR set's dev
  scopes with their noise facts (eval/dataset.jsonl, split dev, --noise per scope, seed 0) and LoCoMo's development
  conversations (every pair of turns, and of observations, of one conversation). Each becomes the other embedder's
  similarity above which the same share of these pairs lies (rounded up to 0.01: never more pairs through than with
  MiniLM).
- The claims' floor has no false side to guard (the claims rules find no clash among LoCoMo's ~600k pairs at any
  similarity, tests/facts/test_contradiction_pairs.py): it must let through the pairs a curator would judge, and is
  carried on the contradiction set's dev pairs (eval/contradictions/pairs.jsonl, both kinds), rounded down to 0.01.
- The relevance floor judges question-to-item distances (bench/recall_floor.py's populations: LoCoMo dev, and the
  EN/FR dev split with its noise). It becomes the distance that keeps the same share of the relevant items as
  MiniLM's floor keeps, on whichever of the two sets needs the wider floor (rounded up to 0.01: no more relevant items
  lost than with MiniLM on either).

Also printed: each embedder's similarity of the contradiction set's dev pairs, contradictions and compatible pairs
apart, and the share of each at or above the conflict threshold.

    .venv/bin/python scripts/calibrate_thresholds.py --embedder multilingual-e5-small [--json PATH]

Django must be set up (scripts/calibrate_thresholds.py does it).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DATASET = ROOT / "eval" / "dataset.jsonl"
CONTRADICTIONS = ROOT / "eval" / "contradictions" / "pairs.jsonl"
REFERENCE = "sentence-transformers"
SIMILARITIES = ("conflict_min_similarity", "claim_min_similarity", "duplicate_similarity")
CARRIED_ON_LABELLED_PAIRS = "claim_min_similarity"


def scope_fact_texts(dataset: Path, locomo: Path | None, noise: int, seed: int) -> dict[str, list[str]]:
    """The texts stored as facts of each scope: an EN/FR dev scope's facts with its noise, a LoCoMo conversation's
    turns, and apart its observations."""
    from bench.recall import load_noise, noise_for

    pool = load_noise(dataset.parent / "noise.jsonl") if noise else {}
    scopes: dict[str, list[str]] = {}
    for line in dataset.read_text(encoding="utf-8").splitlines():
        if line.strip() and (scope := json.loads(line))["split"] == "dev":
            texts = [f["text"] for f in scope["facts"]] + [text for _, text in noise_for(scope, pool, noise, seed)]
            scopes[f"enfr:{scope['scope']}"] = list(dict.fromkeys(texts))
    if locomo:
        from bench.locomo import load_conversations

        for conv in load_conversations(locomo):
            scopes[f"locomo:{conv.sample_id}:turns"] = list(dict.fromkeys(t.text for t in conv.turns))
            scopes[f"locomo:{conv.sample_id}:observations"] = list(dict.fromkeys(o.text for o in conv.observations))
    return scopes


def _vectors(embedder, texts: list[str]) -> dict[str, np.ndarray]:
    unique = list(dict.fromkeys(texts))
    out = {}
    for start in range(0, len(unique), 128):
        out.update(zip(unique[start : start + 128], embedder.embed(unique[start : start + 128])))
    return out


def pair_similarities(embedder, scopes: dict[str, list[str]]) -> dict[str, np.ndarray]:
    """Per population ("enfr", "locomo"), the cosine of every pair of distinct facts of one scope."""
    vectors = _vectors(embedder, [t for texts in scopes.values() for t in texts])
    out: dict[str, list[np.ndarray]] = {}
    for name, texts in scopes.items():
        block = np.array([vectors[t] for t in texts])
        similarity = block @ block.T
        out.setdefault(name.split(":")[0], []).append(similarity[np.triu_indices(len(texts), 1)])
    return {population: np.concatenate(parts) for population, parts in out.items()}


def query_distances(provider: str, locomo: Path | None, dataset: Path, noise: int, seed: int) -> dict:
    """Per set, the relevant and irrelevant items' cosine distances to their question (bench/recall_floor.py)."""
    from django.test.utils import override_settings

    from bench.recall_floor import distances_from_scopes, pairs_from_dataset, pairs_from_locomo, scopes_from_pairs

    sources = {"enfr": lambda: pairs_from_dataset(dataset, "dev", noise=noise, seed=seed)}
    if locomo:
        sources["locomo"] = lambda: pairs_from_locomo(locomo)
    out = {}
    with override_settings(HAKI_EMBED_PROVIDER=provider):
        for name, pairs in sources.items():
            relevant, irrelevant, _ = distances_from_scopes(scopes_from_pairs(pairs()))
            out[name] = {"relevant": relevant, "irrelevant": irrelevant}
    return out


def carry_similarity(
    reference: np.ndarray, target: np.ndarray, threshold: float, round_up: bool = True
) -> tuple[float, float]:
    """(the share of `reference` at or above `threshold`, the target similarity with that share at or above it,
    rounded up to 0.01, or down)."""
    share = float(np.mean(reference >= threshold))
    carried = float(np.quantile(target, 1.0 - share)) * 100
    return share, (math.ceil(carried - 1e-9) if round_up else math.floor(carried + 1e-9)) / 100


def carry_floor(reference: np.ndarray, target: np.ndarray, floor: float) -> tuple[float, float]:
    """(the share of relevant `reference` distances a floor keeps, the target distance keeping that share, rounded
    up to 0.01)."""
    kept = float(np.mean(reference <= floor))
    return kept, math.ceil(float(np.quantile(target, kept)) * 100 - 1e-9) / 100


def contradiction_pairs(embedder, path: Path = CONTRADICTIONS) -> dict[str, np.ndarray]:
    """The cosine of each dev pair of the contradiction set, by kind."""
    pairs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    pairs = [p for p in pairs if p["split"] == "dev"]
    vectors = _vectors(embedder, [t for p in pairs for t in (p["old"], p["new"])])
    out: dict[str, list[float]] = {}
    for p in pairs:
        out.setdefault(p["kind"], []).append(float(vectors[p["old"]] @ vectors[p["new"]]))
    return {kind: np.array(values) for kind, values in out.items()}


def calibrate(*, provider: str, locomo: Path | None, dataset: Path = DATASET, noise: int = 120, seed: int = 0) -> dict:
    """The thresholds carried from MiniLM to `provider`, with the figures they were read from."""
    from hakimem.embeddings import MINILM_THRESHOLDS, get_embedder

    scopes = scope_fact_texts(dataset, locomo, noise, seed)
    sims = {name: pair_similarities(get_embedder(name), scopes) for name in (REFERENCE, provider)}
    contradictions = {name: contradiction_pairs(get_embedder(name)) for name in (REFERENCE, provider)}
    distances = {name: query_distances(name, locomo, dataset, noise, seed) for name in (REFERENCE, provider)}

    report: dict = {"provider": provider, "reference": REFERENCE, "pairs": {}, "similarity": {}, "floor": {}}
    for population in sims[REFERENCE]:
        ref, other = sims[REFERENCE][population], sims[provider][population]
        report["pairs"][population] = {
            "count": len(ref),
            REFERENCE: np.percentile(ref, [50, 99, 99.9]).round(3).tolist(),
            provider: np.percentile(other, [50, 99, 99.9]).round(3).tolist(),
        }
    pooled = {name: np.concatenate(list(sims[name].values())) for name in sims}
    labelled = {name: np.concatenate(list(contradictions[name].values())) for name in contradictions}
    for field in SIMILARITIES:
        threshold = getattr(MINILM_THRESHOLDS, field)
        if field == CARRIED_ON_LABELLED_PAIRS:
            share, carried = carry_similarity(labelled[REFERENCE], labelled[provider], threshold, round_up=False)
        else:
            share, carried = carry_similarity(pooled[REFERENCE], pooled[provider], threshold)
        report["similarity"][field] = {
            REFERENCE: threshold,
            "carried_on": "contradiction dev pairs" if field == CARRIED_ON_LABELLED_PAIRS else "pairs of one scope",
            "share": share,
            provider: carried,
            "by_population": {
                population: carry_similarity(sims[REFERENCE][population], sims[provider][population], threshold)
                for population in sims[REFERENCE]
            },
        }
    conflict = {name: report["similarity"]["conflict_min_similarity"][name] for name in (REFERENCE, provider)}
    report["contradiction_dev_pairs"] = {
        name: {
            kind: {
                "p10_p50_p90": np.percentile(values, [10, 50, 90]).round(3).tolist(),
                "share_at_or_above_conflict": float(np.mean(values >= conflict[name])),
            }
            for kind, values in contradictions[name].items()
        }
        for name in contradictions
    }
    floor = MINILM_THRESHOLDS.recall_max_distance
    by_set = {}
    for name in distances[REFERENCE]:
        ref, other = distances[REFERENCE][name], distances[provider][name]
        kept, carried = carry_floor(ref["relevant"], other["relevant"], floor)
        by_set[name] = {
            "kept": kept,
            provider: carried,
            "irrelevant_dropped": {
                REFERENCE: float(np.mean(ref["irrelevant"] > floor)),
                provider: float(np.mean(other["irrelevant"] > carried)),
            },
        }
    report["floor"] = {REFERENCE: floor, provider: max(s[provider] for s in by_set.values()), "by_set": by_set}
    report["suggested"] = {
        **{field: report["similarity"][field][provider] for field in SIMILARITIES},
        "recall_max_distance": report["floor"][provider],
    }
    return report


def format_report(report: dict) -> str:
    ref, other = report["reference"], report["provider"]
    lines = [f"pairs of facts of one scope (development data): cosine p50 / p99 / p99.9, {ref} against {other}"]
    for population, row in report["pairs"].items():
        lines.append(f"  {population:7} {row['count']:>9,} pairs  {row[ref]}  {row[other]}")
    lines.append("\nsimilarity thresholds carried by the share of pairs at or above them")
    for field, row in report["similarity"].items():
        per_set = ", ".join(f"{p} {v[1]:.2f}" for p, v in row["by_population"].items())
        lines.append(
            f"  {field:24} {ref} {row[ref]:.2f} -> {other} {row[other]:.2f}  on the {row['carried_on']} "
            f"(share {row['share']:.5f}; on the pairs of one scope, by set: {per_set})"
        )
    lines.append("\ncontradiction set, dev pairs: cosine p10 / p50 / p90, share at or above the conflict threshold")
    for name, kinds in report["contradiction_dev_pairs"].items():
        for kind, row in kinds.items():
            lines.append(f"  {name:22} {kind:13} {row['p10_p50_p90']}  {row['share_at_or_above_conflict']:.3f}")
    floor = report["floor"]
    lines.append("\nrelevance floor carried by the share of relevant items it keeps")
    for name, row in floor["by_set"].items():
        dropped = row["irrelevant_dropped"]
        lines.append(
            f"  {name:7} {ref} {floor[ref]:.2f} keeps {row['kept']:.4f} -> {other} {row[other]:.2f}; "
            f"irrelevant items dropped {dropped[ref]:.3f} -> {dropped[other]:.3f}"
        )
    lines.append(f"\nsuggested for {other}: {report['suggested']}")
    return "\n".join(lines)
