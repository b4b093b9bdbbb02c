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
The clients run in this process, on the same cores as the server: the figures include their cost. Loopback
only; every phase is bounded in calls and time. Writes JSON (--out).
"""
from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent

INGEST_PROJECT = "bench-http"
INGEST_SUBJECT = "ingest-1k"
LARGE_SCOPE = 5_000  # loaded scopes at least this big are measured beside the small and the ingested one
SMALL_TARGET = 50
WARM_UP_CALLS_PER_WORKER = 4


# --- the server -----------------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def database_url(settings_dict: dict, **params: str) -> str:
    """A postgresql:// URL for a Django DATABASES entry (host may be a socket folder); `params` are added
    to its query (application_name=...)."""
    from urllib.parse import quote, urlencode

    user = quote(settings_dict["USER"] or "")
    password = f":{quote(settings_dict['PASSWORD'])}" if settings_dict["PASSWORD"] else ""
    host = settings_dict["HOST"] or ""
    if host.startswith("/"):
        netloc, query = f"{user}{password}@" if user else "", f"?host={quote(host)}"
    else:
        netloc, query = f"{user}{password}@{host}" + (f":{settings_dict['PORT']}" if settings_dict["PORT"] else ""), ""
    if params:
        query += ("&" if query else "?") + urlencode(params)
    return f"postgresql://{netloc}/{quote(settings_dict['NAME'])}{query}"


class Server:
    """gunicorn as `make run` starts it (or Django's development server, as `make dev` does), on a free port, from
    the checkout at `root` (scripts/bench_ab.py starts one from another commit's work tree)."""

    def __init__(self, *, kind: str = "gunicorn", env: dict | None = None, log: Path | None = None,
                 port: int | None = None, root: Path = ROOT):
        self.kind, self.port, self.root = kind, port or free_port(), root
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {**os.environ, **(env or {}), "HAKI_PORT": str(self.port)}
        self.log_path = log
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 120.0) -> "Server":
        configuration = "config.gunicorn"
        if not (self.root / "config").is_dir():  # a bench_ab baseline older than the project package config/
            configuration, self.env["DJANGO_SETTINGS_MODULE"] = "hakimem.gunicorn_conf", "hakimem.settings"
        if self.kind == "gunicorn":
            command = [sys.executable, "-m", "gunicorn", "-c", f"python:{configuration}"]
        else:  # the old `make run`: one process, a thread per request, a connection per thread kept 60 s
            self.env.setdefault("HAKI_DB_POOL_MAX", "0")
            command = [sys.executable, "manage.py", "runserver", "--insecure", "--noreload", f"127.0.0.1:{self.port}"]
        out = self.log_path.open("ab") if self.log_path else subprocess.DEVNULL
        self.process = subprocess.Popen(command, cwd=self.root, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                        start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.kind} exited with {self.process.returncode} (log: {self.log_path})")
            try:
                status, _ = request(self.url, "GET", "/v1/health/ready", timeout=5)
                if status == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.25)
        self.stop()
        raise RuntimeError(f"{self.kind} not ready after {timeout:.0f} s (log: {self.log_path})")

    def worker_pids(self) -> list[int]:
        if self.kind != "gunicorn":
            return [self.process.pid]
        out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(self.process.pid)], capture_output=True, text=True)
        return [int(pid) for pid in out.stdout.split()]

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)  # gunicorn: graceful; its workers finish their request
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(5)

    def __enter__(self) -> "Server":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


# --- the clients ----------------------------------------------------------------------------------------

_local = threading.local()
# Clients keep their connection open between requests, as an HTTP client library does. Django's development
# server then answers every request ~40 ms late (it writes headers and body apart: Nagle's algorithm waits for
# the client's delayed ACK); --no-keepalive sends `Connection: close` to measure it without that.
KEEPALIVE = True


def request(base: str, method: str, path: str, body=None, key: str | None = None, timeout: float = 60.0):
    """(status, parsed JSON or None). One keep-alive connection per thread and server; a server that closes
    it after each response (gunicorn's sync workers do) gets a new one for the next request."""
    parsed = urlparse(base)
    connections = _local.__dict__.setdefault("connections", {})
    conn = connections.get(base)
    if conn is None:
        conn = connections[base] = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=timeout)
    # This request's own timeout, also on a connection opened by an earlier one: the first ingest batch on a cold
    # 1M-fact server took over the readiness probe's few seconds and the run died.
    conn.timeout = timeout
    if conn.sock is not None:
        conn.sock.settimeout(timeout)
    headers = {"Accept": "application/json"}
    if not KEEPALIVE:
        headers["Connection"] = "close"
    payload = None
    if body is not None:
        payload = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    if key:
        headers["Authorization"] = f"Bearer {key}"
    try:
        conn.request(method, path, body=payload, headers=headers)
        response = conn.getresponse()
        data = response.read()
        if not KEEPALIVE:
            conn.close()
    except (http.client.HTTPException, OSError):
        conn.close()
        connections.pop(base, None)
        raise
    try:
        return response.status, json.loads(data) if data else None
    except ValueError:
        return response.status, None


def _percentiles(values: list[float]) -> dict:
    import numpy as np

    if not values:
        return {"n": 0}
    arr = np.array(values)
    return {"n": len(values), "p50": round(float(np.percentile(arr, 50)), 2),
            "p95": round(float(np.percentile(arr, 95)), 2), "p99": round(float(np.percentile(arr, 99)), 2),
            "mean": round(float(arr.mean()), 2)}


def load_phase(base: str, key: str, project: str, subject: str, queries: list[str], *, clients: int,
               duration: float | None = None, asks: dict | None = None, think: float = 0.0) -> dict:
    """POST /v1/context with each text of `queries` once, from `clients` threads, for at most `duration`
    seconds (`asks`: more of the request, e.g. tiers), each client waiting `think` seconds after each answer.
    Latency in ms of the calls that answered 200; errors counted by status (or exception name)."""
    texts = iter(queries)
    lock = threading.Lock()
    latencies: list[float] = []
    errors: dict[str, int] = {}
    stop_at = time.monotonic() + duration if duration else None

    def client():
        while stop_at is None or time.monotonic() < stop_at:
            with lock:
                query = next(texts, None)
            if query is None:
                return
            body = {"project_id": project, "subject_id": subject, "query": query, "budget_tokens": 900, **(asks or {})}
            started = time.perf_counter()
            try:
                status, _ = request(base, "POST", "/v1/context", body, key)
            except (http.client.HTTPException, OSError) as exc:
                status = exc.__class__.__name__
            elapsed = (time.perf_counter() - started) * 1000
            with lock:
                if status == 200:
                    latencies.append(elapsed)
                else:
                    errors[str(status)] = errors.get(str(status), 0) + 1
            if think:
                time.sleep(think)

    began = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - began
    calls = len(latencies) + sum(errors.values())
    return {"clients": clients, "calls": calls, "seconds": round(wall, 2), "calls_per_s": round(calls / wall, 1),
            "errors": errors, "latency_ms": _percentiles(latencies), "load_avg_1m": round(os.getloadavg()[0], 2)}


def ingest(base: str, key: str, texts: list[str], *, project: str, subject: str) -> dict:
    """POST /v1/facts in batches of 100 into a fresh subject; the facts stay (they are a scope measured next)."""
    request(base, "DELETE", f"/v1/subjects/{subject}?project_id={project}", key=key)
    timings, errors = [], 0
    for start in range(0, len(texts), 100):
        body = {"facts": [{"project_id": project, "subject_id": subject, "text": t} for t in texts[start:start + 100]]}
        began = time.perf_counter()
        status, _ = request(base, "POST", "/v1/facts", body, key, timeout=120)
        timings.append(time.perf_counter() - began)
        errors += status != 201
    return {"batches": len(timings), "batch_size": 100, "errors": errors,
            "facts_per_s": round(len(texts) / sum(timings), 1) if timings else None,
            "batch_ms": _percentiles([t * 1000 for t in timings])}


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


def _embedded_with(embedder: str, seed: int) -> bool:
    """Whether the loaded facts were embedded by `embedder` (a load by another one holds the same rows)."""
    import numpy as np
    from django.db import connection

    from hakimem.embeddings import get_embedder
    from bench import dataset

    with connection.cursor() as cursor:
        cursor.execute("SELECT text, embedding::text FROM facts_fact WHERE project_id = %s ORDER BY recorded_from LIMIT 1",
                       [dataset.PROJECT])
        row = cursor.fetchone()
    if row is None:
        return False
    stored = np.array(json.loads(row[1]), dtype=np.float32)
    return float(stored @ get_embedder().embed([row[0]])[0]) > 0.99


def in_process_assembler(project: str, subject: str, queries: list[str]) -> dict:
    """scripts/bench.py's figure (b): the assembler in this process, the query vector already computed."""
    from context.assembler import context_assemble
    from hakimem.embeddings import get_embedder

    embedder = get_embedder()
    timings = []
    for query in queries:
        embedder.embed_query(query)
        started = time.perf_counter()
        context_assemble(project_id=project, subject_id=subject, query=query, budget_tokens=900)
        timings.append((time.perf_counter() - started) * 1000)
    return _percentiles(timings)


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
        request(base, "POST", "/v1/identity-blocks", {"project_id": project, "name": f"block-{i}", "text": text,
                                                      "position": i}, key)
    for i in range(BENCH_PROCEDURES):
        request(base, "POST", "/v1/procedures", {
            "project_id": project, "title": f"Procedure {i}: how we handle request type {i}",
            "text": f"Check the client's file, confirm the dates, write the summary for case type {i}, then file it.",
        }, key)


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


def server_environment(embedder: str, extra: dict | None = None) -> dict:
    """A benchmarked server's environment: this process's database (its data folder unless a DATABASE_URL is set),
    `embedder`, no access log, then `extra`."""
    env = {"HAKI_EMBED_PROVIDER": embedder, "HAKI_ACCESS_LOG": "", **(extra or {})}
    if not os.environ.get("DATABASE_URL") and "DATABASE_URL" not in env:
        env["HAKI_PGDATA"] = os.environ["HAKI_PGDATA"]
    return env


def run(*, total: int, embedder: str, queries: int, clients: int, duration: float, ingest_batches: int,
        server_kind: str = "gunicorn", workers: int | None = None, threads: int | None = None, seed: int = 7,
        reload: bool = False, cache_dir: Path = ROOT / "var" / "bench-cache", server_env: dict | None = None,
        log: Path | None = None, tiers: bool = False, think_ms: float = 0.0) -> dict:
    from itertools import islice

    from django.conf import settings

    from hakimem.services import api_key_create
    from bench import dataset, in_process

    settings.HAKI_EMBED_PROVIDER = embedder
    report = {"total": total, "embedder": embedder, "server": server_kind, "keepalive": KEEPALIVE, "cores": os.cpu_count(),
              "load_avg_1m_at_start": round(os.getloadavg()[0], 2)}
    if reload or not in_process._loaded(total, seed) or not _embedded_with(embedder, seed):
        report["load"] = dataset.load(total, embedder, cache_dir, seed)
    _, bench_key = api_key_create(project_id=dataset.PROJECT, label="bench_http")
    _, ingest_key = api_key_create(project_id=INGEST_PROJECT, label="bench_http")

    env = server_environment(embedder, server_env)
    if workers:
        env["HAKI_WORKERS"] = str(workers)
    if threads:
        env["HAKI_THREADS"] = str(threads)

    texts = [f["text"] for f in islice(dataset.generate_facts(120_000, seed + 1), ingest_batches * 100)
             if f["subject_id"] == "big"]
    with Server(kind=server_kind, env=env, log=log) as server:
        report["ingest"] = ingest(server.url, ingest_key, texts, project=INGEST_PROJECT, subject=INGEST_SUBJECT)
    report["settle"] = settle()
    print(f"tables settled: VACUUM (ANALYZE) done and no autovacuum worker running ({report['settle']['seconds']} s); "
          "server restarted so its workers read the new statistics", file=sys.stderr)

    report["scopes"] = {}
    sent: set[str] = set()  # every text is sent once in the whole run, whatever its scope
    with Server(kind=server_kind, env=env, log=log) as server:
        report["workers"] = len(server.worker_pids())
        for label, project, subject, facts, query_seed in _scopes(total, seed, len(texts)):
            key = ingest_key if project == INGEST_PROJECT else bench_key
            pool = [q for q in dataset.generate_queries(10_000, query_seed,
                                                           subject_id="big" if project == INGEST_PROJECT else subject)
                    if q not in sent]
            sent.update(pool)
            warm = WARM_UP_CALLS_PER_WORKER * report["workers"]
            warm_texts, single, rest = pool[:warm], pool[warm:warm + queries], pool[warm + queries:]
            load_phase(server.url, key, project, subject, warm_texts, clients=min(clients, report["workers"]))
            result = {"facts": facts, "project": project, "subject": subject, "distinct_texts": len(pool)}
            result["one_client"] = load_phase(server.url, key, project, subject, single, clients=1)
            if think_ms:
                paced, rest = rest[:queries], rest[queries:]
                result["one_client_paced"] = load_phase(server.url, key, project, subject, paced, clients=1,
                                                        think=think_ms / 1000)
                result["one_client_paced"]["think_ms"] = think_ms
            result["concurrent"] = load_phase(server.url, key, project, subject, rest, clients=clients, duration=duration)
            result["in_process_assembler_ms"] = in_process_assembler(project, subject, single)
            if tiers:
                # Tiered calls with texts of their own, then plain ones again: the ratio compares neighbours in time.
                seed_tiers(server.url, key, project)
                tiered_texts, plain_again = rest[-2 * queries:-queries], rest[-queries:]
                tiered = load_phase(server.url, key, project, subject, tiered_texts, clients=1, asks=TIERED_ASKS)
                plain = load_phase(server.url, key, project, subject, plain_again, clients=1)
                result["tiers"] = {"tiered": tiered, "plain": plain, "p50_ratio": _ratio(tiered, plain, "p50"),
                                   "p95_ratio": _ratio(tiered, plain, "p95")}
                print(f"{label:>7} tiered: p50 {tiered['latency_ms'].get('p50')} p95 {tiered['latency_ms'].get('p95')} ms"
                      f" | plain beside it: p50 {plain['latency_ms'].get('p50')} p95 {plain['latency_ms'].get('p95')} ms"
                      f" | ratio p50 {result['tiers']['p50_ratio']} p95 {result['tiers']['p95_ratio']}",
                      file=sys.stderr, flush=True)
            report["scopes"][label] = result
            print_scope(label, result)
    report["load_avg_1m_at_end"] = round(os.getloadavg()[0], 2)
    return report


def _ratio(a: dict, b: dict, pct: str):
    x, y = a["latency_ms"].get(pct), b["latency_ms"].get(pct)
    return round(x / y, 2) if x and y else None


def _paced(paced: dict) -> str:
    """The 1-client phase with --think-ms between calls, in words."""
    ms = paced["latency_ms"]
    return (f"1 client, {paced['think_ms']:g} ms between calls: p50 {ms.get('p50', '-')} p95 {ms.get('p95', '-')} "
            f"p99 {ms.get('p99', '-')} ms, errors {sum(paced['errors'].values())}")


def print_scope(label: str, s: dict) -> None:
    one, many, asm = s["one_client"], s["concurrent"], s["in_process_assembler_ms"]
    paced = f"{_paced(s['one_client_paced'])} | " if "one_client_paced" in s else ""
    print(f"{label:>7} {s['facts']:>7} | 1 client: p50 {one['latency_ms'].get('p50')} p95 {one['latency_ms'].get('p95')} "
          f"p99 {one['latency_ms'].get('p99')} ms, {one['calls_per_s']}/s, errors {one['errors'] or 0} | {paced}"
          f"{many['clients']} clients: p50 {many['latency_ms'].get('p50')} p95 {many['latency_ms'].get('p95')} "
          f"p99 {many['latency_ms'].get('p99')} ms, {many['calls_per_s']}/s over {many['seconds']} s, errors "
          f"{many['errors'] or 0} | in-process assembler p50 {asm.get('p50')} p95 {asm.get('p95')} ms",
          file=sys.stderr, flush=True)


def print_report(report: dict) -> None:
    print(f"\nhakimem over HTTP: {report['server']} ({report['workers']} workers"
          f"{'' if report['keepalive'] else ', a connection per request'}) on {report['cores']} cores, "
          f"{report['total']} facts in the table, embedder {report['embedder']}, load average "
          f"{report['load_avg_1m_at_start']} at start, {report['load_avg_1m_at_end']} at end")
    print(f"{'scope':>7} {'facts':>6} | {'1 client p50':>12} {'p95':>6} {'p99':>6} {'/s':>6} {'err':>4} | "
          f"{'N clients p50':>13} {'p95':>6} {'p99':>6} {'/s':>6} {'err':>4} | {'in-proc asm p50':>15} {'p95':>6}")
    for label, s in report["scopes"].items():
        one, many, asm = s["one_client"], s["concurrent"], s["in_process_assembler_ms"]
        o, m = one["latency_ms"], many["latency_ms"]
        print(f"{label:>7} {s['facts']:>6} | {o.get('p50', '-'):>12} {o.get('p95', '-'):>6} {o.get('p99', '-'):>6} "
              f"{one['calls_per_s']:>6} {sum(one['errors'].values()):>4} | {m.get('p50', '-'):>13} {m.get('p95', '-'):>6} "
              f"{m.get('p99', '-'):>6} {many['calls_per_s']:>6} {sum(many['errors'].values()):>4} | "
              f"{asm.get('p50', '-'):>15} {asm.get('p95', '-'):>6}")
    clients = next(iter(report["scopes"].values()))["concurrent"]["clients"] if report["scopes"] else "-"
    print(f"(N = {clients}; latencies in ms of the calls answered 200; err = calls that were not)")
    for label, s in report["scopes"].items():
        if "one_client_paced" in s:
            print(f"{label:>7} {s['facts']:>6} | {_paced(s['one_client_paced'])}")
    ing = report["ingest"]
    print(f"ingest over HTTP: {ing['facts_per_s']} facts/s in {ing['batches']} batches of {ing['batch_size']} "
          f"(batch p50 {ing['batch_ms'].get('p50')} ms, errors {ing['errors']})")
