"""What each in-process embedder costs, side by side in one process: loading it, embedding one question, and
embedding a batch of 100 stored texts, on the texts of the EN/FR dataset (eval/dataset.jsonl), English and French.

    .venv/bin/python scripts/bench_embedders.py [--providers sentence-transformers,minilm-int8,multilingual-e5-small]
        [--questions 200] [--batches 20]

Per provider: load time and the process's resident memory after it (the providers load in the order given, so
each figure is what that model adds); one question (distinct questions, no cache) wall and CPU time p50 / p95;
a batch of 100 facts (a different 100 each time) wall and CPU time p50. CPU time adds up every thread's, so it
is the figure to compare on a shared machine, where wall time also counts the waits for a core. The providers
take turns, batch by batch, so a burst of load elsewhere falls on all of them. Also: how close each provider's
vectors are to MiniLM's (mean and minimum cosine over the batch texts; only meaningful for the same model), and
the cosine of unrelated facts (two scopes' facts, p50 and p99), which is what the thresholds written for MiniLM
(HAKI_DUPLICATE_SIMILARITY 0.92, HAKI_CONFLICT_MIN_SIMILARITY 0.75) meet with another model.
It needs Django set up before it is imported: its command line, scripts/bench_embedders.py, does that first.
"""

from __future__ import annotations

import json
import random
import resource
import statistics
import time
from pathlib import Path

import numpy as np

from hakimem.embeddings import get_embedder

DATASET = Path(__file__).resolve().parent.parent / "eval" / "dataset.jsonl"
BATCH = 100


def _rss_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _timed(fn) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000


def run(*, providers: list[str], questions: int = 200, batches: int = 20, seed: int = 0) -> dict:
    scopes = [json.loads(line) for line in DATASET.read_text(encoding="utf-8").splitlines() if line.strip()]
    facts = [f["text"] for s in scopes for f in s["facts"]]
    asked = [q["text"] for s in scopes for q in s["questions"]]
    rng = random.Random(seed)
    rng.shuffle(asked)
    asked = asked[:questions]
    chunks = [rng.sample(facts, BATCH) for _ in range(batches)]
    # Unrelated pairs: a fact of one scope against a fact of another.
    pairs = []
    for _ in range(2000):
        a, b = rng.sample(scopes, 2)
        pairs.append((rng.choice(a["facts"])["text"], rng.choice(b["facts"])["text"]))

    embedders, out = {}, {}
    for name in providers:
        before = _rss_mib()
        wall = time.perf_counter()
        embedder = get_embedder(name)
        embedder.embed(["warming the model up"], queries=True)
        embedders[name] = embedder
        out[name] = {
            "load_ms": (time.perf_counter() - wall) * 1000,
            "rss_added_mib": _rss_mib() - before,
            "one": [],
            "batch": [],
        }
    for embedder in embedders.values():  # warm-up: first batches allocate
        embedder.embed(chunks[0][:32])
    for question in asked:
        for name, embedder in embedders.items():
            out[name]["one"].append(_timed(lambda e=embedder, q=question: e.embed([q], queries=True)))
    for chunk in chunks:
        for name, embedder in embedders.items():
            out[name]["batch"].append(_timed(lambda e=embedder, c=chunk: e.embed(c)))

    reference = embedders.get("sentence-transformers")
    ref_vectors = reference.embed(facts) if reference else None
    report = {}
    for name, embedder in embedders.items():
        row = out[name]
        one_wall, one_cpu = [w for w, _ in row["one"]], [c for _, c in row["one"]]
        batch_wall, batch_cpu = [w for w, _ in row["batch"]], [c for _, c in row["batch"]]
        left = embedder.embed([a for a, _ in pairs])
        right = embedder.embed([b for _, b in pairs])
        unrelated = np.sum(left * right, axis=1)
        entry = {
            "model": embedder.model,
            "load_ms": round(row["load_ms"]),
            "rss_added_mib": round(row["rss_added_mib"]),
            "one_wall_p50_ms": round(statistics.median(one_wall), 2),
            "one_wall_p95_ms": round(_pct(one_wall, 0.95), 2),
            "one_cpu_p50_ms": round(statistics.median(one_cpu), 2),
            "one_cpu_p95_ms": round(_pct(one_cpu, 0.95), 2),
            "batch100_wall_p50_ms": round(statistics.median(batch_wall), 1),
            "batch100_cpu_p50_ms": round(statistics.median(batch_cpu), 1),
            "unrelated_cos_p50": round(float(np.median(unrelated)), 3),
            "unrelated_cos_p99": round(float(np.quantile(unrelated, 0.99)), 3),
        }
        if ref_vectors is not None and name != "sentence-transformers":
            agreement = np.sum(embedder.embed(facts) * ref_vectors, axis=1)
            entry["cos_to_minilm_mean"] = round(float(agreement.mean()), 4)
            entry["cos_to_minilm_min"] = round(float(agreement.min()), 4)
        report[name] = entry
    return {"questions": len(asked), "batches": batches, "batch_size": BATCH, "providers": report}


def format_report(report: dict) -> str:
    cols = (
        "load_ms",
        "rss_added_mib",
        "one_wall_p50_ms",
        "one_wall_p95_ms",
        "one_cpu_p50_ms",
        "one_cpu_p95_ms",
        "batch100_wall_p50_ms",
        "batch100_cpu_p50_ms",
        "unrelated_cos_p50",
        "unrelated_cos_p99",
        "cos_to_minilm_mean",
        "cos_to_minilm_min",
    )
    lines = [
        f"{report['questions']} questions one at a time, {report['batches']} batches of {report['batch_size']} facts",
        "provider".ljust(24) + "".join(c.rjust(22) for c in cols),
    ]
    for name, row in report["providers"].items():
        lines.append(name.ljust(24) + "".join(str(row.get(c, "")).rjust(22) for c in cols))
    return "\n".join(lines)
