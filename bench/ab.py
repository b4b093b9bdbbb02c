"""A change's effect on the context call as a client sees it: two production servers, one from a baseline commit and
one from this checkout, each question sent to both; or two databases, both served by this checkout.

    python scripts/bench_ab.py --baseline HEAD~1                 # bench_http's dataset (loaded if missing)
    python scripts/bench_ab.py --baseline main --queries 300 --think-ms 50 --scopes small,big
    python scripts/bench_ab.py --baseline HEAD~1 --tiers         # tiered calls (bench_http's identity blocks, procedures)
    DATABASE_URL=<a Citus coordinator> python scripts/bench_ab.py --baseline-database var/pgdata-single --total 200000

--baseline-database (a postgresql:// URL, or an embedded server's data folder) replaces the baseline commit: the
baseline server runs this checkout against that database, the other against this process's (DATABASE_URL or
HAKI_PGDATA), so the ratio is one database's against the other's, e.g. a Citus cluster's against one server's
(docs/scaling.md). The dataset is loaded into each if missing and each is settled, the baseline's by this command in a
child process (`--prepare`) with that database's environment; both must then hold the same rows for the packets to
be compared (a restore of the one into the other does).

A single run of scripts/bench_http.py moves by several milliseconds from one run to the next (docs/performance.md),
more than most changes to the hot path are worth; two servers asked the same questions side by side, in random order,
under the same load, compare what one run alone cannot. This script
1. makes a work tree of the baseline commit (`git worktree add --detach`, under var/, removed at the end);
2. starts gunicorn as `make run` does from each checkout, both on the same database (bench_http's data folder,
   var/pgdata-bench-http, or HAKI_PGDATA / DATABASE_URL), with bench_http's dataset loaded into it if missing and
   its tables settled first (VACUUM (ANALYZE), no autovacuum running); the schema must be the same at both commits
   (a change with a migration cannot be compared this way); two servers hold twice one server's connections;
3. per scope (bench_http's: ~50 facts, the ingested ~1k if bench_http made it, each loaded scope of 5k or more), sends
   each of --queries distinct question texts to both servers in random order, --think-ms after each answer (an
   application waits for its LLM between two turns), after a warm-up of both;
4. prints each server's p50 / p95 / p99, each as a multiple of the run's floor too, and the ratio of this checkout's to
   the baseline's, how many of the calls both answered with the same packet (the same items in the same order), then
   issue 31's targets met or not by each, and writes JSON (--out).
The floor (issue 31) is printed once at the top: embedding one question in this process with the configured embedder
(p50) + the round trip of `GET /v1/health/live` (p50), the probes sent to both servers in turn; measured again after
the last scope, the ratios use the one measured before (printed beside the second at the end).
Both servers run on the machine's cores beside this client: the figures include its cost, the same for both.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.clients import percentiles, request
from bench.floor import (
    FLOOR_SAMPLES,
    fig,
    floor_line,
    floor_measure,
    floor_questions,
    floor_targets,
    target_line,
    to_floor,
)
from bench.over_http import INGEST_PROJECT, TIERED_ASKS, WARM_UP_CALLS_PER_WORKER, _scopes, seed_tiers, settle
from bench.server import Server, database_url, server_environment

ROOT = Path(__file__).resolve().parent.parent

BUDGET_TOKENS = 900


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()


# What names a packet's item: the rows' ids, and for a tiered call's blocks and procedures, which bench_ab writes into
# each database with ids of their own, their names.
PACKET_PARTS = {"facts": "id", "episodes": "id", "identity": "name", "procedures": "title"}


def _call(server: Server, key: str, project: str, subject: str, query: str, asks: dict) -> tuple[float, tuple] | None:
    """One context call's latency in ms and its packet's items in order, part by part; None if it did not answer
    200."""
    body = {"project_id": project, "subject_id": subject, "query": query, "budget_tokens": BUDGET_TOKENS, **asks}
    started = time.perf_counter()
    status, packet = request(server.url, "POST", "/v1/context", body, key)
    if status != 200:
        return None
    ms = (time.perf_counter() - started) * 1000
    return ms, tuple(tuple(item[name] for item in packet.get(part) or ()) for part, name in PACKET_PARTS.items())


def database_environment(target: str) -> dict[str, str]:
    """The environment that points a process of this checkout at `target`: a postgresql:// URL, or an embedded
    server's data folder (DATABASE_URL set empty: a URL inherited from this process would win over the folder)."""
    if target.startswith(("postgresql://", "postgres://")):
        return {"DATABASE_URL": target}
    return {"DATABASE_URL": "", "HAKI_PGDATA": str(Path(target).resolve())}


def database_label(target: str) -> str:
    """`target` as the report names it: a URL without its password, or the folder."""
    from urllib.parse import urlsplit

    if not target.startswith(("postgresql://", "postgres://")):
        return str(Path(target).resolve())
    url = urlsplit(target)
    netloc = (f"{url.username}@" if url.username else "") + (url.hostname or "") + (f":{url.port}" if url.port else "")
    return url._replace(netloc=netloc).geturl()


def prepare(*, total: int, embedder: str, cache_dir: Path, seed: int) -> dict:
    """The configured database made ready: bench_http's dataset loaded if missing, the ingested scope's size, a key per
    project (raw: never written to the report) and its tables settled."""
    from django.conf import settings
    from django.db import connection

    from hakimem.services import api_key_create
    from bench import dataset, loader

    settings.HAKI_EMBED_PROVIDER = embedder
    load = loader.ensure_loaded(total, embedder, cache_dir, seed)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM facts_fact WHERE project_id = %s AND status = 'active'", [INGEST_PROJECT])
        ingested = cursor.fetchone()[0]
    keys = {
        project: api_key_create(project_id=project, label="bench_ab")[1]
        for project in (dataset.PROJECT, INGEST_PROJECT)
    }
    # The servers read the statistics of settled tables (which statement a call takes depends on them).
    return {"load": load, "ingested": ingested, "keys": keys, "settle": settle()}


def prepare_elsewhere(target: str, *, total: int, embedder: str, cache_dir: Path, seed: int) -> dict:
    """prepare() on the database `target`, in a child process of scripts/bench_ab.py given its environment (Django
    holds one default database a process); its log goes to this one's stderr."""
    command = [sys.executable, str(ROOT / "scripts" / "bench_ab.py"), "--prepare", "--total", str(total)]
    command += ["--embedder", embedder, "--seed", str(seed), "--cache-dir", str(cache_dir)]
    done = subprocess.run(
        command, cwd=ROOT, env={**os.environ, **database_environment(target)}, stdout=subprocess.PIPE, text=True
    )
    if done.returncode:
        raise RuntimeError(f"preparing {database_label(target)}: bench_ab.py --prepare exited {done.returncode}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def compare(
    servers: dict[str, Server],
    keys: dict[str, dict[str, str]],
    *,
    total: int,
    seed: int,
    queries: int,
    think_ms: float,
    scopes: set[str] | None,
    ingested: int,
    floor_ms: float,
    sent: set[str],
    asks: dict | None = None,
) -> dict:
    """Per scope, each server's figures (and their multiples of `floor_ms`) and how many calls both answered with the
    same packet; `keys`: each server's key per project; `sent`: texts never to send, filled; `asks`: what every call
    asks besides its question (TIERED_ASKS for tiered calls)."""
    asks = asks or {}
    from bench import dataset

    rng = random.Random(seed)
    report: dict = {}
    for label, project, subject, facts, query_seed in _scopes(total, seed, ingested):
        if scopes and label not in scopes:
            continue
        pool = [
            q
            for q in dataset.generate_queries(
                10_000, query_seed + 1000, subject_id="big" if project == INGEST_PROJECT else subject
            )
            if q not in sent
        ]
        warm = WARM_UP_CALLS_PER_WORKER * 3
        texts = pool[: warm + queries]
        sent.update(texts)
        latencies: dict[str, list[float]] = {name: [] for name in servers}
        errors = {name: 0 for name in servers}
        same_packets = 0
        for i, text in enumerate(texts):
            order = list(servers)
            rng.shuffle(order)
            packets = {}
            for name in order:
                answer = _call(servers[name], keys[name][project], project, subject, text, asks)
                if i >= warm:
                    if answer is None:
                        errors[name] += 1
                    else:
                        latencies[name].append(answer[0])
                        packets[name] = answer[1]
                if think_ms:
                    time.sleep(think_ms / 1000)
            same_packets += len(packets) == len(servers) and len(set(packets.values())) == 1
        result = {
            "facts": facts,
            "project": project,
            "subject": subject,
            "calls": queries,
            "errors": errors,
            "same_packets": same_packets,
            **{name: percentiles(values) for name, values in latencies.items()},
        }
        base, new = result["baseline"], result["checkout"]
        result["ratio"] = {
            pct: round(new[pct] / base[pct], 3) for pct in ("p50", "p95", "p99") if base.get(pct) and new.get(pct)
        }
        result["x_floor"] = {name: to_floor(result[name], floor_ms) for name in servers}
        report[label] = result
        figures = {
            name: " ".join(fig(result[name], pct, floor_ms) for pct in ("p50", "p95", "p99")) for name in servers
        }
        print(
            f"{label:>7} {facts:>7} | baseline {figures['baseline']} | checkout {figures['checkout']} | checkout / "
            f"baseline p50 {result['ratio'].get('p50')} p95 {result['ratio'].get('p95')} | same packets "
            f"{same_packets}/{queries} | errors {errors} | load {os.getloadavg()[0]:.2f}",
            file=sys.stderr,
            flush=True,
        )
    return report


def run(
    *,
    baseline: str | None = None,
    baseline_database: str | None = None,
    total: int,
    embedder: str,
    queries: int,
    think_ms: float,
    scopes: set[str] | None = None,
    seed: int = 7,
    cache_dir: Path = ROOT / "var" / "bench-cache",
    server_env: dict | None = None,
    log: Path | None = None,
    tiers: bool = False,
) -> dict:
    """The comparison on the configured database (bench_http's dataset loaded into it if missing), against the
    commit `baseline` on the same database or, with `baseline_database`, this checkout on that one; its report."""
    if (baseline is None) == (baseline_database is None):
        raise ValueError("a baseline commit or a baseline database: one of the two")
    asks = TIERED_ASKS if tiers else {}
    from django.conf import settings
    from django.db import connection

    head, baseline_commit = _git("rev-parse", "HEAD"), _git("rev-parse", baseline) if baseline else None
    here = prepare(total=total, embedder=embedder, cache_dir=cache_dir, seed=seed)
    keys = {"checkout": here["keys"]}
    report = {
        "baseline": baseline_commit or head,
        "checkout": head + ("+changes" if _git("status", "--porcelain", "--untracked-files=no") else ""),
        "embedder": embedder,
        "think_ms": think_ms,
        "asks": asks,
        "cores": os.cpu_count(),
        "settle": here["settle"],
    }
    ingested = here["ingested"]
    # Both servers share this checkout's exported model.
    env = server_environment(embedder, {"HAKI_MODEL_DIR": settings.HAKI_MODEL_DIR, **(server_env or {})})
    tree = None
    if baseline_database:
        there = prepare_elsewhere(baseline_database, total=total, embedder=embedder, cache_dir=cache_dir, seed=seed)
        keys["baseline"] = there["keys"]
        report["databases"] = {
            "baseline": database_label(baseline_database),
            "checkout": database_label(database_url(connection.settings_dict)),
        }
        report["baseline_settle"] = there["settle"]
        if there["ingested"] != ingested:  # bench_http's ingested scope in one database only: not comparable
            print(f"ingested scope left out: {there['ingested']} facts there, {ingested} here", file=sys.stderr)
            ingested = 0
        base_server = Server(env={**env, **database_environment(baseline_database)}, log=log)
        print(
            f"baseline: this checkout on {report['databases']['baseline']}; checkout: on "
            f"{report['databases']['checkout']}",
            file=sys.stderr,
        )
    else:
        keys["baseline"] = keys["checkout"]
        (ROOT / "var").mkdir(exist_ok=True)
        tree = Path(tempfile.mkdtemp(prefix="bench-ab-", dir=ROOT / "var"))
        _git("worktree", "add", "--detach", str(tree), report["baseline"])
        base_server = Server(env=env, log=log, root=tree)
    report["load_avg_1m_at_start"] = round(os.getloadavg()[0], 2)
    try:
        with base_server as base, Server(env=env, log=log) as new:
            urls, sent = [base.url, new.url], set()
            floor_texts = floor_questions(FLOOR_SAMPLES, seed, sent)
            sent.update(floor_texts)
            floor = floor_measure(urls, floor_texts)
            report["floor"] = {
                "floor_ms": floor["floor_ms"],
                "used": "measured before the context calls",
                "before": floor,
            }
            print(floor_line(floor), file=sys.stderr, flush=True)
            if tiers:  # the projects' identity blocks and procedures, written once into each database
                for server, name in [(new, "checkout")] + ([(base, "baseline")] if baseline_database else []):
                    for project, key in keys[name].items():
                        seed_tiers(server.url, key, project)
            report["scopes"] = compare(
                {"baseline": base, "checkout": new},
                keys,
                total=total,
                seed=seed,
                queries=queries,
                think_ms=think_ms,
                scopes=scopes,
                ingested=ingested,
                floor_ms=floor["floor_ms"],
                sent=sent,
                asks=asks,
            )
            report["floor"]["after"] = floor_measure(urls, floor_questions(FLOOR_SAMPLES, seed + 1, sent))
    finally:
        if tree:
            _git("worktree", "remove", "--force", str(tree))
    report["load_avg_1m_at_end"] = round(os.getloadavg()[0], 2)
    # Issue 31's targets for the floor are a plain call's; a tiered call's is its ratio to a plain one (bench_http.py).
    report["targets"] = (
        {}
        if tiers
        else {
            name: floor_targets(
                {label: (s["facts"], s[name]) for label, s in report["scopes"].items()},
                report["floor"]["floor_ms"],
                total,
            )
            for name in ("baseline", "checkout")
        }
    )
    print(
        f"measured again after the context calls (not used for the ratios): {floor_line(report['floor']['after'])}",
        file=sys.stderr,
    )
    if tiers:
        print("issue 31's targets are a plain call's: tiered / plain is bench_http.py --tiers's", file=sys.stderr)
        return report
    print("issue 31's targets, as multiples of the floor measured before the calls:", file=sys.stderr)
    for name, rows in report["targets"].items():
        for row in rows:
            print(f"  {name}: {target_line(row)}", file=sys.stderr)
    return report
