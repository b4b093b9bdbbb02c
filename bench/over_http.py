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
`GET /v1/health/live` through the server under test (p50), measured before the context calls and again after them;
the ratios use the mean of the two, and the targets of issue 31 are printed met or not against it.
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

    def __init__(
        self,
        *,
        kind: str = "gunicorn",
        env: dict | None = None,
        log: Path | None = None,
        port: int | None = None,
        root: Path = ROOT,
    ):
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
        self.process = subprocess.Popen(
            command, cwd=self.root, env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
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
    reused = conn.sock is not None
    try:
        conn.request(method, path, body=payload, headers=headers)
        response = conn.getresponse()
        data = response.read()
        if not KEEPALIVE:
            conn.close()
    except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
        conn.close()
        connections.pop(base, None)
        if not reused:
            raise
        # A kept-alive connection the server closed while it was idle (gthread's keepalive): once on a new one.
        return request(base, method, path, body, key, timeout)
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
    return {
        "n": len(values),
        "p50": round(float(np.percentile(arr, 50)), 2),
        "p95": round(float(np.percentile(arr, 95)), 2),
        "p99": round(float(np.percentile(arr, 99)), 2),
        "mean": round(float(arr.mean()), 2),
    }


# --- the floor ------------------------------------------------------------------------------------------
# Issue 31's measuring rule: absolute milliseconds move 2x between machines of the same kind, so every latency is read
# as a ratio to what any service that embeds the question must pay, measured in the same run on the same machine:
# embedding one question with the configured embedder (p50) + the liveness probe's round trip through the server
# under test (p50). Everything a context call adds beyond that is hakimem's own cost.

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
        embedder.embed([question])
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
    embed, live = _percentiles(embed_ms), _percentiles(live_ms)
    return {
        "embed_ms": embed,
        "live_ms": live,
        "floor_ms": round(embed["p50"] + live["p50"], 2),
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }


def floor_of_run(before: dict, after: dict) -> dict:
    """The run's floor: the mean of the one measured before the context calls and the one measured after them."""
    return {
        "floor_ms": round((before["floor_ms"] + after["floor_ms"]) / 2, 2),
        "used": "mean of before and after",
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
    """The floor in words: its parts, and the measurements it is the mean of (if it is)."""

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
        f"after them {one(floor['after'])}"
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


def load_phase(
    base: str,
    key: str,
    project: str,
    subject: str,
    queries: list[str],
    *,
    clients: int,
    duration: float | None = None,
    asks: dict | None = None,
    think: float = 0.0,
) -> dict:
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
    return {
        "clients": clients,
        "calls": calls,
        "seconds": round(wall, 2),
        "calls_per_s": round(calls / wall, 1),
        "errors": errors,
        "latency_ms": _percentiles(latencies),
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }


def ingest(base: str, key: str, texts: list[str], *, project: str, subject: str) -> dict:
    """POST /v1/facts in batches of 100 into a fresh subject; the facts stay (they are a scope measured next)."""
    request(base, "DELETE", f"/v1/subjects/{subject}?project_id={project}", key=key)
    timings, errors = [], 0
    for start in range(0, len(texts), 100):
        body = {
            "facts": [{"project_id": project, "subject_id": subject, "text": t} for t in texts[start : start + 100]]
        }
        began = time.perf_counter()
        status, _ = request(base, "POST", "/v1/facts", body, key, timeout=120)
        timings.append(time.perf_counter() - began)
        errors += status != 201
    return {
        "batches": len(timings),
        "batch_size": 100,
        "errors": errors,
        "facts_per_s": round(len(texts) / sum(timings), 1) if timings else None,
        "batch_ms": _percentiles([t * 1000 for t in timings]),
    }


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
        cursor.execute(
            "SELECT text, embedding::text FROM facts_fact WHERE project_id = %s ORDER BY recorded_from LIMIT 1",
            [dataset.PROJECT],
        )
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
        embedder.embed_query(query, project_id=project)
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


def server_environment(embedder: str, extra: dict | None = None) -> dict:
    """A benchmarked server's environment: this process's database (its data folder unless a DATABASE_URL is set),
    `embedder`, no access log, then `extra`."""
    env = {"HAKI_EMBED_PROVIDER": embedder, "HAKI_ACCESS_LOG": "", **(extra or {})}
    if not os.environ.get("DATABASE_URL") and "DATABASE_URL" not in env:
        env["HAKI_PGDATA"] = os.environ["HAKI_PGDATA"]
    return env


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
    from bench import dataset, in_process, loader

    settings.HAKI_EMBED_PROVIDER = embedder
    report = {
        "total": total,
        "embedder": embedder,
        "server": server_kind,
        "keepalive": KEEPALIVE,
        "cores": os.cpu_count(),
        "load_avg_1m_at_start": round(os.getloadavg()[0], 2),
    }
    if reload or not in_process._loaded(total, seed) or not _embedded_with(embedder, seed):
        report["load"] = loader.load(total, embedder, cache_dir, seed)
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
