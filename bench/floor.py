"""The floor a context call's latency is read against, and issue 31's targets as multiples of it.

Issue 31's measuring rule: absolute milliseconds move 2x between machines of the same kind, so every latency is read
as a ratio to what any service that embeds the question must pay, measured in the same run on the same machine:
embedding one question with the configured embedder (p50) + the liveness probe's round trip through the server
under test (p50). Everything a context call adds beyond that is hakimem's own cost.
"""

from __future__ import annotations

import os
import time

from bench.clients import percentiles, request

LARGE_SCOPE = 5_000  # loaded scopes at least this big are measured (bench.over_http) and held to the 5k+ target

FLOOR_SAMPLES = 60
FLOOR_WARM_UP = 5
FLOOR_SEED_OFFSET = 5_000  # the floor's questions come from a seed no scope draws from


def floor_questions(n: int, seed: int, exclude: set[str]) -> list[str]:
    """`n` distinct questions, none in `exclude` (the texts the run sends or has sent)."""
    from bench import dataset

    questions = [q for q in dataset.generate_queries(4 * n, seed + FLOOR_SEED_OFFSET) if q not in exclude][:n]
    if len(questions) < n:
        raise RuntimeError(f"only {len(questions)} questions for the floor, {n} asked")
    return questions


def floor_measure(bases: list[str], questions: list[str]) -> dict:
    """The floor now: each of `questions` embedded alone in this process with the configured embedder (its vector is
    never cached), then as many `GET /v1/health/live` round trips, taken in turn from the servers at `bases`; both
    warmed first. floor_ms = embed p50 + live p50."""
    from hakimem.embeddings import get_embedder

    embedder = get_embedder()
    for i in range(FLOOR_WARM_UP):
        embedder.embed([f"warming the model before the floor, sentence {i}"])
    embed_ms = []
    for question in questions:
        started = time.perf_counter()
        embedder.embed([question], queries=True)  # as a context call embeds it
        embed_ms.append((time.perf_counter() - started) * 1000)
    live_ms = []
    for i in range(FLOOR_WARM_UP + len(questions)):
        base = bases[i % len(bases)]
        started = time.perf_counter()
        status, _ = request(base, "GET", "/v1/health/live")
        elapsed = (time.perf_counter() - started) * 1000
        if status != 200:
            raise RuntimeError(f"GET /v1/health/live answered {status} at {base}")
        if i >= FLOOR_WARM_UP:
            live_ms.append(elapsed)
    embed, live = percentiles(embed_ms), percentiles(live_ms)
    return {
        "embed_ms": embed,
        "live_ms": live,
        "floor_ms": round(embed["p50"] + live["p50"], 2),
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }


def floor_of_run(before: dict, after: dict) -> dict:
    """The run's floor: the one measured before the context calls, which every line printed during the run used; the one
    measured after them is kept beside it, to show how far the machine's load moved meanwhile."""
    return {
        "floor_ms": before["floor_ms"],
        "used": "measured before the context calls",
        "before": before,
        "after": after,
    }


def to_floor(latency_ms: dict, floor_ms: float) -> dict:
    """Each percentile of `latency_ms` as a multiple of `floor_ms`."""
    return {pct: round(latency_ms[pct] / floor_ms, 2) for pct in ("p50", "p95", "p99", "mean") if latency_ms.get(pct)}


def fig(latency_ms: dict, pct: str, floor_ms: float | None) -> str:
    """`p50 40.1 ms (2.1x floor)`."""
    value = latency_ms.get(pct)
    if value is None:
        return f"{pct} -"
    return f"{pct} {value} ms" + (f" ({value / floor_ms:.2f}x floor)" if floor_ms else "")


def floor_line(floor: dict) -> str:
    """The floor in words: its parts, and the one measured after the calls (if it was)."""

    def one(f: dict) -> str:
        e, live = f["embed_ms"], f["live_ms"]
        return (
            f"{f['floor_ms']} ms = embed one question p50 {e['p50']} (p95 {e['p95']}) + GET /v1/health/live p50 "
            f"{live['p50']} (p95 {live['p95']}), n {e['n']}, load {f['load_avg_1m']}"
        )

    if "before" not in floor:
        return f"floor {one(floor)}"
    return (
        f"floor {floor['floor_ms']} ms ({floor['used']}): before the context calls {one(floor['before'])}; "
        f"after them, not used for the ratios, {one(floor['after'])}"
    )


# Issue 31's targets for the context call, as multiples of the floor: (what, scopes it applies to, percentile, limit).
TARGETS = [
    ("50-fact scope, 1 client, p50", lambda label, facts, total: label == "small", "p50", 1.5),
    ("50-fact scope, 1 client, p95", lambda label, facts, total: label == "small", "p95", 2.0),
    ("5k+ scope, 1 client, p50", lambda label, facts, total: facts >= LARGE_SCOPE, "p50", 2.0),
    (
        "10k+ scope in a 1M-fact table, 1 client, p95",
        lambda label, facts, total: facts >= 10_000 and total >= 1_000_000,
        "p95",
        2.5,
    ),
]
TIERED_LIMIT = 1.3  # tiered calls within 1.3x of plain ones, p50 and p95
THROUGHPUT_SHARE = 0.8  # 8 clients at the 50-fact scope: at least 0.8 x (cores / floor) calls per second


def floor_targets(scopes: dict[str, tuple[int, dict]], floor_ms: float, total: int) -> list[dict]:
    """The targets met or not by `scopes` (label -> (facts, 1-client latency_ms))."""
    rows = []
    for what, applies, pct, limit in TARGETS:
        for label, (facts, latency) in scopes.items():
            if applies(label, facts, total) and latency.get(pct):
                ratio = round(latency[pct] / floor_ms, 2)
                rows.append(
                    {
                        "target": what,
                        "scope": label,
                        "facts": facts,
                        "ms": latency[pct],
                        "ratio": ratio,
                        "limit": limit,
                        "met": ratio <= limit,
                    }
                )
    return rows


def target_line(row: dict) -> str:
    if "ratio" in row:
        return (
            f"{row['target']} <= {row['limit']}x floor: {row['scope']} ({row['facts']} facts) {row['ms']} ms = "
            f"{row['ratio']}x: {'met' if row['met'] else 'not met'}"
        )
    return f"{row['target']}: {row['figure']}: {'met' if row['met'] else 'not met'}"
