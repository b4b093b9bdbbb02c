"""The context call's latency as a client sees it: over HTTP, against the production server of `make run`.

    python scripts/bench_http.py                                  # MiniLM; 16,667 facts: scopes of ~50 and 10k
    python scripts/bench_http.py --embedder hashing --duration 5  # a quick run
    python scripts/bench_http.py --server runserver               # the same against Django's development server
    python scripts/bench_http.py --total 200000                   # a 100k scope in a 200k table (and 10k ones)

It starts gunicorn with config/gunicorn.py (what `make run` starts) on a free loopback port, against its
own embedded server (var/pgdata-bench-http, or HAKI_PGDATA / DATABASE_URL), and in that database:
1. loads bench/dataset.py's dataset into project "bench" unless it is there (embeddings cached in
   var/bench-cache, shared with scripts/bench.py);
2. ingests --ingest-batches batches of 100 facts over HTTP (POST /v1/facts, embedding and conflict detection
   included) into a fresh subject of project "bench-http": that is the ~1k scope measured below;
3. runs VACUUM (ANALYZE) on the memory tables, waits until no autovacuum worker runs, and restarts the server
   (its workers cache the planner's statistics for five minutes), so every figure is taken on settled tables;
4. per scope (~50 facts, the ingested ~1k, and each loaded scope of 5k facts or more): POST /v1/context with
   DISTINCT query texts (each text is sent once in the whole run: no embedding cache decides a figure), first
   --queries calls from 1 client back to back, with --think-ms as many more from 1 client that waits that long
   after each answer (an application's LLM turn: the trace, written after the answer, is then no longer on the
   next call's cores), then --clients clients for --duration seconds (or until the scope's texts
   run out); prints p50/p95/p99, throughput and errors; then, in this process, the assembler alone on the
   1-client texts (its query vectors computed first), as scripts/bench.py measures it.
Every latency is printed beside its multiple of the run's floor (issue 31): embedding one question with the configured
embedder in this process (p50 over FLOOR_SAMPLES distinct questions the run never sends) + the round trip of
`GET /v1/health/live` through the server under test (p50), measured before the context calls (the ratios and the
targets of issue 31, met or not, use it) and again after them (printed beside it: how far the load moved).
The clients run in this process, on the same cores as the server: the figures include their cost. Loopback
only; every phase is bounded in calls and time. Writes JSON (--out).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from bench import clients as http_clients
from bench.clients import ingest, load_phase, percentiles, request
from bench.floor import (
    FLOOR_SAMPLES,
    LARGE_SCOPE,
    THROUGHPUT_SHARE,
    TIERED_LIMIT,
    fig,
    floor_line,
    floor_measure,
    floor_of_run,
    floor_questions,
    floor_targets,
    target_line,
    to_floor,
)
from bench.server import ROOT, Server, server_environment

INGEST_PROJECT = "bench-http"
INGEST_SUBJECT = "ingest-1k"
SMALL_TARGET = 50
WARM_UP_CALLS_PER_WORKER = 4


# --- the run --------------------------------------------------------------------------------------------


def settle(timeout: float = 120.0) -> dict:
    """VACUUM (ANALYZE) the memory tables, then wait until no autovacuum worker runs (bounded)."""
    from django.db import connection

    began = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("VACUUM (ANALYZE) facts_fact, facts_event, facts_conflictmember, facts_conflictset")
        deadline = time.monotonic() + timeout
        while True:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'")
            running = cursor.fetchone()[0]
            if not running or time.monotonic() > deadline:
                break
            time.sleep(1)
    return {"seconds": round(time.perf_counter() - began, 1), "autovacuum_workers_left": running}


def in_process_assembler(project: str, subject: str, queries: list[str]) -> dict:
    """scripts/bench.py's figure (b): the assembler in this process, the query vector already computed."""
    from context.assembler import context_assemble
    from hakimem.embeddings import get_embedder

    embedder = get_embedder()
    timings = []
    for query in queries:
        embedder.embed_query(query, project_id=project)
        started = time.perf_counter()
        context_assemble(project_id=project, subject_id=subject, query=query, budget_tokens=900)
        timings.append((time.perf_counter() - started) * 1000)
    return percentiles(timings)


# --tiers: what a tiered call costs beside a plain one. Each project measured gets project-wide identity blocks and
# procedures (a team's handful), so that a tiered call has all five tiers to fill.
TIERED_ASKS = {"tiers": True}  # with budget_tokens 900: the same total as the plain calls, split by tier
BENCH_PROCEDURES = 20


def seed_tiers(base: str, key: str, project: str) -> None:
    """Two identity blocks and BENCH_PROCEDURES procedures, project-wide, unless the project has them."""
    status, body = request(base, "GET", f"/v1/identity-blocks?project_id={project}", key=key)
    if status == 200 and body and body.get("identity_blocks"):
        return
    for i, text in enumerate(["You are the assistant of a small consultancy.", "Answer in plain words; cite dates."]):
        request(
            base,
            "POST",
            "/v1/identity-blocks",
            {"project_id": project, "name": f"block-{i}", "text": text, "position": i},
            key,
        )
    for i in range(BENCH_PROCEDURES):
        request(
            base,
            "POST",
            "/v1/procedures",
            {
                "project_id": project,
                "title": f"Procedure {i}: how we handle request type {i}",
                "text": f"Check the client's file, confirm the dates, write the summary for case type {i}, then file it.",
            },
            key,
        )


def _scopes(total: int, seed: int, ingested: int) -> list[tuple[str, str, str, int, int]]:
    """(label, project, subject, facts, query seed) of every scope measured; queries name each scope's cast."""
    from bench import dataset

    sizes = dict(dataset.subject_sizes(total, seed))
    small = min((s for s in sizes if s.startswith("s-")), key=lambda s: (abs(sizes[s] - SMALL_TARGET), s))
    scopes = [("small", dataset.PROJECT, small, sizes[small], seed)]
    if ingested:
        # the ingested texts are the first facts of "big" drawn with seed + 1: its cast, its questions
        scopes.append(("ingest", INGEST_PROJECT, INGEST_SUBJECT, ingested, seed + 1))
    for subject in ("mid-0", "big"):
        if sizes.get(subject, 0) >= LARGE_SCOPE:
            scopes.append((subject, dataset.PROJECT, subject, sizes[subject], seed))
    return scopes


def run(
    *,
    total: int,
    embedder: str,
    queries: int,
    clients: int,
    duration: float,
    ingest_batches: int,
    server_kind: str = "gunicorn",
    workers: int | None = None,
    threads: int | None = None,
    seed: int = 7,
    reload: bool = False,
    cache_dir: Path = ROOT / "var" / "bench-cache",
    server_env: dict | None = None,
    log: Path | None = None,
    tiers: bool = False,
    think_ms: float = 0.0,
) -> dict:
    from itertools import islice

    from django.conf import settings

    from hakimem.services import api_key_create
    from bench import dataset, loader

    settings.HAKI_EMBED_PROVIDER = embedder
    report = {
        "total": total,
        "embedder": embedder,
        "server": server_kind,
        "keepalive": http_clients.KEEPALIVE,
        "cores": os.cpu_count(),
        "load_avg_1m_at_start": round(os.getloadavg()[0], 2),
    }
    load = loader.ensure_loaded(total, embedder, cache_dir, seed, reload=reload)
    if load:
        report["load"] = load
    _, bench_key = api_key_create(project_id=dataset.PROJECT, label="bench_http")
    _, ingest_key = api_key_create(project_id=INGEST_PROJECT, label="bench_http")

    env = server_environment(embedder, server_env)
    if workers:
        env["HAKI_WORKERS"] = str(workers)
    if threads:
        env["HAKI_THREADS"] = str(threads)

    texts = [
        f["text"]
        for f in islice(dataset.generate_facts(120_000, seed + 1), ingest_batches * 100)
        if f["subject_id"] == "big"
    ]
    with Server(kind=server_kind, env=env, log=log) as server:
        report["ingest"] = ingest(server.url, ingest_key, texts, project=INGEST_PROJECT, subject=INGEST_SUBJECT)
    report["settle"] = settle()
    print(
        f"tables settled: VACUUM (ANALYZE) done and no autovacuum worker running ({report['settle']['seconds']} s); "
        "server restarted so its workers read the new statistics",
        file=sys.stderr,
    )

    report["scopes"] = {}
    sent: set[str] = set()  # every text is sent once in the whole run, whatever its scope
    with Server(kind=server_kind, env=env, log=log) as server:
        report["workers"] = len(server.worker_pids())
        floor_texts = floor_questions(FLOOR_SAMPLES, seed, sent)
        sent.update(floor_texts)
        before = floor_measure([server.url], floor_texts)
        print(f"{floor_line(before)}; the lines below give ratios to this one", file=sys.stderr, flush=True)
        for label, project, subject, facts, query_seed in _scopes(total, seed, len(texts)):
            key = ingest_key if project == INGEST_PROJECT else bench_key
            pool = [
                q
                for q in dataset.generate_queries(
                    10_000, query_seed, subject_id="big" if project == INGEST_PROJECT else subject
                )
                if q not in sent
            ]
            sent.update(pool)
            warm = WARM_UP_CALLS_PER_WORKER * report["workers"]
            warm_texts, single, rest = pool[:warm], pool[warm : warm + queries], pool[warm + queries :]
            load_phase(server.url, key, project, subject, warm_texts, clients=min(clients, report["workers"]))
            result = {"facts": facts, "project": project, "subject": subject, "distinct_texts": len(pool)}
            result["one_client"] = load_phase(server.url, key, project, subject, single, clients=1)
            if think_ms:
                paced, rest = rest[:queries], rest[queries:]
                result["one_client_paced"] = load_phase(
                    server.url, key, project, subject, paced, clients=1, think=think_ms / 1000
                )
                result["one_client_paced"]["think_ms"] = think_ms
            result["concurrent"] = load_phase(
                server.url, key, project, subject, rest, clients=clients, duration=duration
            )
            result["in_process_assembler_ms"] = in_process_assembler(project, subject, single)
            if tiers:
                # Tiered calls with texts of their own, then plain ones again: the ratio compares neighbours in time.
                seed_tiers(server.url, key, project)
                tiered_texts, plain_again = rest[-2 * queries : -queries], rest[-queries:]
                tiered = load_phase(server.url, key, project, subject, tiered_texts, clients=1, asks=TIERED_ASKS)
                plain = load_phase(server.url, key, project, subject, plain_again, clients=1)
                result["tiers"] = {
                    "tiered": tiered,
                    "plain": plain,
                    "p50_ratio": _ratio(tiered, plain, "p50"),
                    "p95_ratio": _ratio(tiered, plain, "p95"),
                }
            report["scopes"][label] = result
            print_scope(label, result, before["floor_ms"])
        after_texts = floor_questions(FLOOR_SAMPLES, seed + 1, sent)
        sent.update(after_texts)
        report["floor"] = floor_of_run(before, floor_measure([server.url], after_texts))
    report["load_avg_1m_at_end"] = round(os.getloadavg()[0], 2)
    _add_ratios(report)
    return report


def _phases(scope: dict) -> list[dict]:
    """The phases of a scope's result that hold a latency_ms."""
    phases = [scope[k] for k in ("one_client", "one_client_paced", "concurrent") if k in scope]
    return phases + [scope["tiers"][k] for k in ("tiered", "plain")] if "tiers" in scope else phases


def _add_ratios(report: dict) -> None:
    """Every latency of the report as a multiple of the run's floor (`x_floor` beside each `latency_ms`), and issue
    31's targets met or not."""
    floor_ms = report["floor"]["floor_ms"]
    for scope in report["scopes"].values():
        for phase in _phases(scope):
            phase["x_floor"] = to_floor(phase["latency_ms"], floor_ms)
        scope["in_process_assembler_x_floor"] = to_floor(scope["in_process_assembler_ms"], floor_ms)
    report["ingest"]["batch_x_floor"] = to_floor(report["ingest"]["batch_ms"], floor_ms)
    targets = floor_targets(
        {label: (s["facts"], s["one_client"]["latency_ms"]) for label, s in report["scopes"].items()},
        floor_ms,
        report["total"],
    )
    for label, s in report["scopes"].items():
        if "tiers" in s:
            worst = max(s["tiers"]["p50_ratio"] or float("inf"), s["tiers"]["p95_ratio"] or float("inf"))
            targets.append(
                {
                    "target": f"tiered within {TIERED_LIMIT}x of plain, p50 and p95",
                    "scope": label,
                    "figure": f"{label}: tiered / plain p50 {s['tiers']['p50_ratio']}, p95 {s['tiers']['p95_ratio']}",
                    "met": worst <= TIERED_LIMIT,
                }
            )
    small = report["scopes"].get("small")
    if small and small["concurrent"]["clients"] == 8:
        many = small["concurrent"]
        floor_rate = round(THROUGHPUT_SHARE * report["cores"] / (floor_ms / 1000), 1)
        targets.append(
            {
                "target": f"8 clients, 50-fact scope: zero errors and >= {THROUGHPUT_SHARE} x cores / floor calls/s",
                "scope": "small",
                "figure": f"{many['calls_per_s']}/s against {floor_rate}/s, errors {sum(many['errors'].values())}",
                "met": not many["errors"] and many["calls_per_s"] >= floor_rate,
            }
        )
    report["targets"] = targets


def _ratio(a: dict, b: dict, pct: str):
    x, y = a["latency_ms"].get(pct), b["latency_ms"].get(pct)
    return round(x / y, 2) if x and y else None


def _paced(paced: dict, floor_ms: float | None) -> str:
    """The 1-client phase with --think-ms between calls, in words."""
    ms = paced["latency_ms"]
    return (
        f"1 client, {paced['think_ms']:g} ms between calls: {fig(ms, 'p50', floor_ms)} {fig(ms, 'p95', floor_ms)} "
        f"{fig(ms, 'p99', floor_ms)}, errors {sum(paced['errors'].values())}"
    )


def _phase(name: str, phase: dict, floor_ms: float | None) -> str:
    ms = phase["latency_ms"]
    return (
        f"{name}: {fig(ms, 'p50', floor_ms)} {fig(ms, 'p95', floor_ms)} {fig(ms, 'p99', floor_ms)}, "
        f"{phase['calls_per_s']}/s over {phase['seconds']} s, errors {sum(phase['errors'].values())}"
    )


def scope_lines(label: str, s: dict, floor_ms: float | None) -> list[str]:
    """A scope's figures, each with its multiple of `floor_ms`."""
    asm = s["in_process_assembler_ms"]
    lines = [_phase("1 client", s["one_client"], floor_ms)]
    if "one_client_paced" in s:
        lines.append(_paced(s["one_client_paced"], floor_ms))
    lines.append(_phase(f"{s['concurrent']['clients']} clients", s["concurrent"], floor_ms))
    lines.append(f"in-process assembler: {fig(asm, 'p50', floor_ms)} {fig(asm, 'p95', floor_ms)}")
    if "tiers" in s:
        t = s["tiers"]
        lines.append(
            f"tiered: {fig(t['tiered']['latency_ms'], 'p50', floor_ms)} {fig(t['tiered']['latency_ms'], 'p95', floor_ms)}"
            f" | plain beside it: {fig(t['plain']['latency_ms'], 'p50', floor_ms)} "
            f"{fig(t['plain']['latency_ms'], 'p95', floor_ms)} | tiered / plain p50 {t['p50_ratio']} "
            f"p95 {t['p95_ratio']}"
        )
    head = f"{label:>7} {s['facts']:>7} facts | "
    return [head + lines[0]] + [" " * (len(head) - 2) + "| " + line for line in lines[1:]]


def print_scope(label: str, s: dict, floor_ms: float) -> None:
    print("\n".join(scope_lines(label, s, floor_ms)), file=sys.stderr, flush=True)


def print_report(report: dict) -> None:
    floor_ms = report["floor"]["floor_ms"]
    print(
        f"\nhakimem over HTTP: {report['server']} ({report['workers']} workers"
        f"{'' if report['keepalive'] else ', a connection per request'}) on {report['cores']} cores, "
        f"{report['total']} facts in the table, embedder {report['embedder']}, load average "
        f"{report['load_avg_1m_at_start']} at start, {report['load_avg_1m_at_end']} at end"
    )
    print(floor_line(report["floor"]))
    for label, s in report["scopes"].items():
        print("\n".join(scope_lines(label, s, floor_ms)))
    print(
        "(latencies in ms of the calls answered 200, each with its multiple of the floor; errors = calls that were not)"
    )
    ing = report["ingest"]
    print(
        f"ingest over HTTP: {ing['facts_per_s']} facts/s in {ing['batches']} batches of {ing['batch_size']} "
        f"(batch {fig(ing['batch_ms'], 'p50', floor_ms)}, errors {ing['errors']})"
    )
    print("issue 31's targets, as multiples of this run's floor:")
    for row in report["targets"]:
        print(f"  {target_line(row)}")
