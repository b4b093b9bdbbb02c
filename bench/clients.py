"""The benchmarks' clients: one HTTP request on a kept-alive connection per thread and server, N clients calling
POST /v1/context for a while, facts ingested in batches, and the percentiles every figure is reported in."""

from __future__ import annotations

import http.client
import json
import os
import threading
import time
from urllib.parse import urlparse

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


def percentiles(values: list[float]) -> dict:
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
        "latency_ms": percentiles(latencies),
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
        "batch_ms": percentiles([t * 1000 for t in timings]),
    }
