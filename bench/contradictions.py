"""Contradiction harness: does the write path open a conflict set when, and only when, a new fact contradicts a
stored one? Every pair of eval/contradictions/pairs.jsonl (see its README) goes through the real write path,
in process: a fresh scope (project PROJECT, subject = the pair's id) under the `curator` conflict policy,
facts.writes.fact_create of the old fact, then of the new one. The outcome is the new fact's write result:

- conflict: it carries a conflict set;
- duplicate: it answered deduplicated=true with the stored fact;
- distinct: stored as a fact of its own.

A contradiction is caught when its outcome is `conflict`; a compatible pair is right when it is `distinct`
(a conflict there is a false set, a duplicate drops a fact the curator would keep). The project is erased
before the run and after it, also on error, so a run leaves no fact behind.

run(...) returns the report (per-pair outcomes and the summary); format_report(report) prints it. Django must
be set up (scripts/_django.py, or pytest).
"""

from __future__ import annotations

import json
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PAIRS = ROOT / "eval" / "contradictions" / "pairs.jsonl"
PROJECT = "eval-contra"
ACTOR = "eval:contradictions"
CONFLICT, DUPLICATE, DISTINCT = "conflict", "duplicate", "distinct"
KINDS = ("contradiction", "compatible")
EXPECTED = {"contradiction": CONFLICT, "compatible": DISTINCT}


def load_pairs(path: Path = DEFAULT_PAIRS, *, split: str = "all", ids=None) -> list[dict]:
    pairs = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    if split != "all":
        pairs = [p for p in pairs if p["split"] == split]
    if ids:
        wanted = set(ids)
        pairs = [p for p in pairs if p["id"] in wanted]
        missing = wanted - {p["id"] for p in pairs}
        if missing:
            raise ValueError(f"unknown pair ids (or not in split {split}): {sorted(missing)}")
    return pairs


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    denominator = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(a @ b / denominator) if denominator else 0.0


def _outcome(result) -> str:
    if result.conflict_set is not None:
        return CONFLICT
    return DUPLICATE if result.deduplicated else DISTINCT


def _vector(value) -> np.ndarray:
    to_numpy = getattr(value, "to_numpy", None)  # pgvector's HalfVector, when read back from the database
    return np.asarray(to_numpy() if to_numpy else value, dtype=np.float64)


def run_pair(pair: dict, *, project_id: str = PROJECT) -> dict:
    """Write the pair's two facts into a scope of its own; the scope must be empty."""
    from facts.writes import fact_create
    from hakimem.embeddings import get_embedder

    scope = {"project_id": project_id, "subject_id": pair["id"]}
    started = time.perf_counter()
    first = fact_create(actor=ACTOR, text=pair["old"], **scope)
    result = fact_create(actor=ACTOR, text=pair["new"], **scope)
    elapsed_ms = (time.perf_counter() - started) * 1000.0
    outcome = _outcome(result)
    conflict = result.conflict_set
    # The cosine of the vectors the write path embedded; a de-duplicated write stored none of its own.
    old_vector = _vector(first.fact.embedding)
    new_vector = _vector(get_embedder().embed([pair["new"]])[0] if result.deduplicated else result.fact.embedding)
    return {
        **{k: pair[k] for k in ("id", "lang", "kind", "category", "style", "split")},
        "outcome": outcome,
        "correct": outcome == EXPECTED[pair["kind"]],
        "similarity": round(_cosine(old_vector, new_vector), 4),
        "signal": conflict.signal if conflict else None,
        "signal_detail": conflict.signal_detail if conflict else None,
        "write_ms": round(elapsed_ms, 2),
        "old": pair["old"],
        "new": pair["new"],
    }


def _rate(numerator: int, denominator: int) -> float | None:
    return round(numerator / denominator, 4) if denominator else None


def summarise(records: list[dict]) -> dict:
    """Per language and overall: recall on contradictions, false-set rate on compatible pairs, de-duplications;
    per category (and style) the misses."""

    def block(rows: list[dict]) -> dict:
        by_kind = {kind: Counter(r["outcome"] for r in rows if r["kind"] == kind) for kind in KINDS}
        contra, compat = by_kind["contradiction"], by_kind["compatible"]
        n_contra, n_compat = sum(contra.values()), sum(compat.values())
        sets = contra[CONFLICT] + compat[CONFLICT]
        return {
            "pairs": len(rows),
            "contradictions": n_contra,
            "compatible": n_compat,
            "outcomes": {kind: dict(sorted(by_kind[kind].items())) for kind in KINDS},
            "recall": _rate(contra[CONFLICT], n_contra),
            "false_set_rate": _rate(compat[CONFLICT], n_compat),
            "precision": _rate(contra[CONFLICT], sets),
            "deduplicated": contra[DUPLICATE] + compat[DUPLICATE],
            "deduplicated_contradictions": contra[DUPLICATE],
            "deduplicated_compatible": compat[DUPLICATE],
            "accuracy": _rate(sum(1 for r in rows if r["correct"]), len(rows)),
        }

    langs = sorted({r["lang"] for r in records})
    categories: dict = defaultdict(
        lambda: {"kind": None, "pairs": Counter(), "misses": Counter(), "outcomes": Counter()}
    )
    styles: dict = defaultdict(lambda: {"pairs": Counter(), "misses": Counter()})
    for r in records:
        c = categories[r["category"]]
        c["kind"] = r["kind"]
        c["pairs"][r["lang"]] += 1
        c["outcomes"][r["outcome"]] += 1
        s = styles[(r["kind"], r["style"])]
        s["pairs"][r["lang"]] += 1
        if not r["correct"]:
            c["misses"][r["lang"]] += 1
            s["misses"][r["lang"]] += 1
    return {
        "overall": block(records),
        "by_lang": {lang: block([r for r in records if r["lang"] == lang]) for lang in langs},
        "by_category": {
            name: {
                "kind": c["kind"],
                "pairs": dict(c["pairs"]),
                "misses": dict(c["misses"]),
                "outcomes": dict(sorted(c["outcomes"].items())),
            }
            # in the set's order (contradictions first), which groups related categories
            for name, c in sorted(categories.items(), key=lambda item: KINDS.index(item[1]["kind"]))
        },
        "by_style": {
            f"{kind}/{style}": {"pairs": dict(s["pairs"]), "misses": dict(s["misses"])}
            for (kind, style), s in sorted(styles.items())
        },
    }


def run(
    *,
    pairs_path: Path = DEFAULT_PAIRS,
    split: str = "all",
    ids=None,
    embedder: str | None = None,
    project_id: str = PROJECT,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Run the pairs through the write path and return the report: config, summary, one record per pair
    (its outcome, the conflict set's rule, and the cosine similarity of the two facts' embeddings)."""
    from django.conf import settings
    from django.test.utils import override_settings

    overrides = {"HAKI_CONFLICT_POLICY": "curator", **({"HAKI_EMBED_PROVIDER": embedder} if embedder else {})}
    with override_settings(**overrides):
        return _run(
            settings=settings,
            pairs_path=Path(pairs_path),
            pairs=load_pairs(pairs_path, split=split, ids=ids),
            split=split,
            project_id=project_id,
            progress=progress or (lambda _msg: None),
        )


def _ensure_curator(project_id: str) -> None:
    """The environment's policy is overridden to curator; a stored row for the eval project must agree."""
    from facts import selectors
    from facts.consent import project_update

    if selectors.project_settings(project_id).conflict_policy != "curator":
        project_update(project_id=project_id, changes={"conflict_policy": "curator"})


def _run(*, settings, pairs_path: Path, pairs: list[dict], split: str, project_id: str, progress) -> dict:
    from privacy.services import project_erase
    from hakimem.embeddings import get_embedder, thresholds

    started = time.perf_counter()
    get_embedder().embed(["warm-up"])  # loads the model, so the first pair's time is a write's
    load_seconds = time.perf_counter() - started
    project_erase(project_id=project_id)  # what an interrupted run may have left
    _ensure_curator(project_id)
    records: list[dict] = []
    try:
        for n, pair in enumerate(pairs, start=1):
            records.append(run_pair(pair, project_id=project_id))
            if n % 50 == 0 or n == len(pairs):
                progress(f"[{n}/{len(pairs)}] {time.perf_counter() - started:.1f}s")
    finally:
        erased = project_erase(project_id=project_id)
    write_seconds = sum(r["write_ms"] for r in records) / 1000.0
    return {
        "config": {
            "pairs_file": str(pairs_path.resolve().relative_to(ROOT))
            if pairs_path.resolve().is_relative_to(ROOT)
            else str(pairs_path),
            "split": split,
            "pairs": len(records),
            "project_id": project_id,
            "embedder": settings.HAKI_EMBED_PROVIDER,
            "conflict_policy": "curator",
            "conflict_min_similarity": thresholds().conflict_min_similarity,
            "claim_min_similarity": thresholds().claim_min_similarity,
            "duplicate_similarity": thresholds().duplicate_similarity,
            "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "duration_s": round(time.perf_counter() - started, 2),
            "embedder_load_s": round(load_seconds, 2),
            "write_s": round(write_seconds, 2),
            "erased": {k: v for k, v in erased.items() if v},
        },
        "summary": summarise(records),
        "pairs": records,
    }


# --- the printed report ----------------------------------------------------------------------------------


def _pct(value) -> str:
    return "   -  " if value is None else f"{100 * value:5.1f}%"


def format_report(report: dict) -> str:
    config, summary = report["config"], report["summary"]
    lines = [
        f"contradiction set: {config['pairs']} pairs (split {config['split']}), embedder {config['embedder']}, "
        f"conflict >= {config['conflict_min_similarity']}, claims >= {config.get('claim_min_similarity')}, "
        f"duplicate >= {config['duplicate_similarity']}",
        "",
        f"{'':8} {'pairs':>5} {'recall':>7} {'false sets':>11} {'precision':>9} {'dedup':>6}  outcomes "
        "(contradictions | compatible)",
    ]
    for name, b in [*summary["by_lang"].items(), ("all", summary["overall"])]:
        o = b["outcomes"]
        fmt = lambda c: " ".join(f"{k} {c.get(k, 0)}" for k in (CONFLICT, DUPLICATE, DISTINCT))  # noqa: E731
        lines.append(
            f"{name:8} {b['pairs']:5} {_pct(b['recall']):>7} {_pct(b['false_set_rate']):>11} "
            f"{_pct(b['precision']):>9} {b['deduplicated']:6}  {fmt(o['contradiction'])} | {fmt(o['compatible'])}"
        )
    lines += [
        "",
        "recall: contradictions that opened a set; false sets: compatible pairs that opened one; "
        "dedup: pairs of either kind answered deduplicated=true",
        "",
        f"misses per category ({'missed/pairs':>12}: en, fr, all; contradiction missed = no set; "
        "compatible missed = set or dedup)",
    ]
    for name, c in summary["by_category"].items():
        cells = []
        for lang in ("en", "fr"):
            cells.append(f"{c['misses'].get(lang, 0):2}/{c['pairs'].get(lang, 0):<2}")
        total = f"{sum(c['misses'].values()):3}/{sum(c['pairs'].values()):<3}"
        outcomes = " ".join(f"{k} {v}" for k, v in c["outcomes"].items())
        lines.append(f"  {c['kind']:13} {name:20} {'  '.join(cells)}  {total}  ({outcomes})")
    lines += ["", "misses per style (en, fr)"]
    for name, s in summary["by_style"].items():
        cells = "  ".join(f"{s['misses'].get(lang, 0):2}/{s['pairs'].get(lang, 0):<2}" for lang in ("en", "fr"))
        lines.append(f"  {name:25} {cells}")
    per_pair = 1000 * config["write_s"] / config["pairs"] if config["pairs"] else 0.0
    lines += [
        "",
        f"time: {config['duration_s']:.1f} s in all: embedder load {config['embedder_load_s']:.1f} s, "
        f"writes {config['write_s']:.1f} s ({per_pair:.0f} ms a pair, two fact_create calls)",
    ]
    return "\n".join(lines)


def format_errors(report: dict) -> str:
    lines = []
    for r in report["pairs"]:
        if not r["correct"]:
            signal = f" [{r['signal']}: {r['signal_detail']}]" if r["signal"] else ""
            lines.append(
                f"{r['id']:15} {r['kind']:13} -> {r['outcome']:9} sim {r['similarity']:.3f}{signal}\n"
                f"{'':17}old: {r['old']}\n{'':17}new: {r['new']}"
            )
    return "\n".join(lines) if lines else "no misclassified pair"
