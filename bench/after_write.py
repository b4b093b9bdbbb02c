"""The context call right after a bulk write, against the same calls once the tables are settled.

    python scripts/bench_after_write.py                      # 5,000 facts written, 200 calls, then 200 settled
    python scripts/bench_after_write.py --facts 1000 --calls 50 --embedder hashing   # a quick run

Issue 31's target: right after a bulk write of 5k facts, the first 200 calls are within 1.2x of the settled
figures. On bench_http's database (var/pgdata-bench-http, or HAKI_PGDATA / DATABASE_URL; its dataset loaded if
missing, so the new scope sits in a table that already holds others), with gunicorn as `make run` starts it:
1. the floor (bench/floor.py), then --facts new facts written over HTTP (POST /v1/facts, batches of 100)
   into a fresh subject of project "bench-after-write";
2. at once, --calls distinct questions from 1 client, --think-ms after each answer (the "fresh" figures);
3. VACUUM (ANALYZE) and no autovacuum worker left (what bench_http calls settled), the same server kept: its
   workers see the statistics change (context/retrieval.py's version), as a production server would;
4. --calls more distinct questions the same way (the "settled" figures), the floor again, the subject erased.
Prints both with their multiples of the floor and fresh / settled at p50 and p95 against the target. JSON: --out;
the server's log beside it (each call's phases: hakimem.context's `context_call` lines).
"""

from __future__ import annotations

import os
import sys
import time
from itertools import islice

from bench import clients, floor, over_http, server

PROJECT = "bench-after-write"
SUBJECT = "bulk"
TARGET = 1.2


def run(*, facts: int, calls: int, embedder: str, think_ms: float, seed: int, total: int, log=None) -> dict:
    from django.conf import settings

    from bench import dataset, loader
    from hakimem.services import api_key_create

    settings.HAKI_EMBED_PROVIDER = embedder
    report = {"facts": facts, "calls": calls, "embedder": embedder, "think_ms": think_ms, "cores": os.cpu_count()}
    load = loader.ensure_loaded(total, embedder, server.ROOT / "var" / "bench-cache", seed)
    if load:
        report["load"] = load
    _, key = api_key_create(project_id=PROJECT, label="bench_after_write")
    # New texts about the cast of "big" (a seed no loaded scope drew from), and questions about that cast.
    drawn = (f["text"] for f in dataset.generate_facts(40 * facts, seed + 31) if f["subject_id"] == "big")
    texts = list(islice(drawn, facts))
    if len(texts) < facts:
        raise RuntimeError(f"only {len(texts)} distinct fact texts, {facts} asked")
    questions = dataset.generate_queries(2 * calls + 20, seed + 31, subject_id="big")
    floor_texts = floor.floor_questions(floor.FLOOR_SAMPLES, seed, set(questions))
    warm, fresh_texts, settled_texts = (
        questions[:12],
        questions[12 : 12 + calls],
        questions[12 + calls : 12 + 2 * calls],
    )

    env = server.server_environment(embedder)
    with server.Server(env=env, log=log) as running:
        before = floor.floor_measure([running.url], floor_texts)
        print(floor.floor_line(before), file=sys.stderr, flush=True)
        clients.load_phase(running.url, key, PROJECT, SUBJECT, warm, clients=len(running.worker_pids()))
        began = time.perf_counter()
        report["write"] = clients.ingest(running.url, key, texts, project=PROJECT, subject=SUBJECT)
        report["write"]["seconds"] = round(time.perf_counter() - began, 1)
        print(f"written: {report['write']}", file=sys.stderr, flush=True)
        think = think_ms / 1000
        report["fresh"] = clients.load_phase(running.url, key, PROJECT, SUBJECT, fresh_texts, clients=1, think=think)
        report["settle"] = over_http.settle()
        report["settled"] = clients.load_phase(
            running.url, key, PROJECT, SUBJECT, settled_texts, clients=1, think=think
        )
        after = floor.floor_measure([running.url], floor_texts)
        clients.request(running.url, "DELETE", f"/v1/subjects/{SUBJECT}?project_id={PROJECT}", key=key)
    report["floor"] = floor.floor_of_run(before, after)
    floor_ms = report["floor"]["floor_ms"]
    for phase in ("fresh", "settled"):
        report[phase]["x_floor"] = floor.to_floor(report[phase]["latency_ms"], floor_ms)
    fresh, settled = report["fresh"]["latency_ms"], report["settled"]["latency_ms"]
    report["fresh_over_settled"] = {
        pct: round(fresh[pct] / settled[pct], 3) for pct in ("p50", "p95") if fresh.get(pct) and settled.get(pct)
    }
    report["target"] = {"fresh_over_settled_at_most": TARGET}
    return report


def print_report(report: dict) -> None:
    floor_ms = report["floor"]["floor_ms"]
    print(floor.floor_line(report["floor"]))
    w = report["write"]
    print(f"write: {report['facts']} facts in {w['seconds']} s ({w['facts_per_s']} facts/s), {w['errors']} errors")
    for phase in ("fresh", "settled"):
        p = report[phase]
        print(
            f"{phase:8s} {p['latency_ms']['n']} calls: {floor.fig(p['latency_ms'], 'p50', floor_ms)}, "
            f"{floor.fig(p['latency_ms'], 'p95', floor_ms)}, errors {p['errors'] or 0}"
        )
    for pct, ratio in report["fresh_over_settled"].items():
        print(f"fresh / settled {pct}: {ratio} (target <= {TARGET}: {'met' if ratio <= TARGET else 'not met'})")
