"""What the running service says about itself: Prometheus series at /metrics (for a bearer of HAKI_METRICS_TOKEN;
a 404 while it is unset), one log line per context call.

Series (prometheus-client; under gunicorn each worker writes its own files in PROMETHEUS_MULTIPROC_DIR, set by
config/gunicorn.py, and /metrics adds them up whichever worker answers):
- hakimem_http_request_duration_seconds{method, endpoint, status}: every request, by URL pattern;
- hakimem_context_phase_seconds{phase}: the phases a context call's trace times (embed, retrieve, rank,
  pack, multi_hop, render) and the trace write itself (trace_write);
- hakimem_context_calls_total{status}, hakimem_context_decisions_total{reason_code};
- hakimem_embed_seconds{provider, kind}: the model's time for one query or a batch of texts, and
  hakimem_embed_query_cache_total{result}: the query vectors the cache answered (hit) or the model made (miss);
- hakimem_context_reads_total{database, reason}: where a context call read when a read replica is configured
  (hakimem/db_router.py): replica/fresh, primary/replica_behind (the scope was written since the replica's
  replay point), primary/replica_unavailable;
- hakimem_db_pool_connections{state}: the pool's open connections (size), idle ones (available) and requests
  waiting for one (waiting), summed over the live workers; hakimem_db_pool_max: their bound.

The log line (logger hakimem.context, INFO) is JSON with the trace id, the project, the status, the latency
and phase timings and the counts; never the query, the packet's text or the subject id.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import time

from django.conf import settings
from django.core.signals import request_finished
from django.db import connections
from django.http import Http404, HttpResponse
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest, multiprocess
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY

logger = logging.getLogger("hakimem.context")

# Milliseconds matter here: the targets are 10-50 ms a call.
_LATENCY_BUCKETS = (0.002, 0.005, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_PHASE_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.25, 0.5, 1.0)

HTTP_DURATION = Histogram(
    "hakimem_http_request_duration_seconds",
    "Time from request to response, by URL pattern",
    ["method", "endpoint", "status"],
    buckets=_LATENCY_BUCKETS,
)
CONTEXT_PHASE = Histogram(
    "hakimem_context_phase_seconds",
    "Time of each phase of POST /v1/context, from its trace",
    ["phase"],
    buckets=_PHASE_BUCKETS,
)
CONTEXT_CALLS = Counter("hakimem_context_calls", "Context calls, by trace status", ["status"])
DECISIONS = Counter("hakimem_context_decisions", "Decisions of context calls, by reason code", ["reason_code"])
EMBED = Histogram(
    "hakimem_embed_seconds",
    "Time of the embedding model: one query, or a batch of texts",
    ["provider", "kind"],
    buckets=_PHASE_BUCKETS,
)
EMBED_QUERY_CACHE = Counter(
    "hakimem_embed_query_cache", "Query vectors from the cache (hit) or the model (miss)", ["result"]
)
CONTEXT_READS = Counter(
    "hakimem_context_reads", "Where context calls read, with a read replica configured", ["database", "reason"]
)
POOL = Gauge(
    "hakimem_db_pool_connections",
    "Database pool: open connections (size), idle ones (available), requests waiting for one (waiting)",
    ["state"],
    multiprocess_mode="livesum",
)
POOL_MAX = Gauge("hakimem_db_pool_max", "Database pool: the most connections it may open", multiprocess_mode="livesum")


# --- HTTP ----------------------------------------------------------------------------------------------

# The methods a label may name: any other (a client may invent one per request) is counted as "other", so that no
# anonymous client can multiply the series.
HTTP_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class MetricsMiddleware:
    """Times every request; the endpoint label is the URL pattern (`v1/facts/<uuid:fact_id>`), never the path, and
    the method one of HTTP_METHODS or "other"."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.perf_counter()
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        endpoint = match.route if match is not None else "unmatched"
        method = request.method if request.method in HTTP_METHODS else "other"
        HTTP_DURATION.labels(method, endpoint, str(response.status_code)).observe(time.perf_counter() - started)
        return response


def metrics_view(request):
    """GET /metrics: Prometheus' text format, for a bearer of settings.HAKI_METRICS_TOKEN. Unset, the page does not
    exist (404): the series tell how the service is used (calls, cache hits, latencies), which no anonymous client
    should learn. A wrong or missing token: 401."""
    token = settings.HAKI_METRICS_TOKEN
    if not token:
        raise Http404
    scheme, _, sent = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(sent.strip().encode(), token.encode()):
        response = HttpResponse(
            "A bearer token (HAKI_METRICS_TOKEN) is needed.\n", status=401, content_type="text/plain; charset=utf-8"
        )
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    else:
        registry = REGISTRY
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)


def pool_gauges(**_kwargs) -> None:
    """After each request, once its connection is back in the pool (Django's own request_finished receiver,
    connected first, returns it), and when a worker starts."""
    pool = getattr(connections["default"], "pool", None)
    if pool is None:
        return
    stats = pool.get_stats()
    POOL.labels("size").set(stats.get("pool_size", 0))
    POOL.labels("available").set(stats.get("pool_available", 0))
    POOL.labels("waiting").set(stats.get("requests_waiting", 0))
    POOL_MAX.set(stats.get("pool_max", 0))


request_finished.connect(pool_gauges, dispatch_uid="hakimem.observability.pool_gauges")


# --- context calls -------------------------------------------------------------------------------------


def context_call_observed(*, trace: dict, reason_codes: list[str], write_seconds: float) -> None:
    """Called by traces.services.trace_record once a context call's trace is written."""
    for phase, ms in (trace.get("timings") or {}).items():
        CONTEXT_PHASE.labels(phase).observe(ms / 1000)
    CONTEXT_PHASE.labels("trace_write").observe(write_seconds)
    CONTEXT_CALLS.labels(str(trace["status"])).inc()
    counts: dict[str, int] = {}
    for code in reason_codes:
        counts[code] = counts.get(code, 0) + 1
    for code, count in counts.items():
        DECISIONS.labels(code).inc(count)
    if logger.isEnabledFor(logging.INFO):
        logger.info(
            json.dumps(
                {
                    "event": "context_call",
                    "trace_id": str(trace["id"]),
                    "project_id": trace["project_id"],
                    "status": str(trace["status"]),
                    "empty_reason": str(trace["empty_reason"]) if trace.get("empty_reason") else None,
                    "latency_ms": trace.get("latency_ms"),
                    "timings_ms": trace.get("timings"),
                    "trace_write_ms": round(write_seconds * 1000, 3),
                    "candidates": trace.get("candidates"),
                    "facts_served": trace.get("facts_served"),
                    "episodes_served": trace.get("episodes_served"),
                    "used_tokens": trace.get("used_tokens"),
                    "budget_tokens": trace.get("budget_tokens"),
                    "embedder": trace.get("embedder"),
                }
            )
        )


def context_reads(database: str, reason: str) -> None:
    CONTEXT_READS.labels(database, reason).inc()


# --- the embedder --------------------------------------------------------------------------------------


def embedded(provider: str, texts: int, seconds: float) -> None:
    EMBED.labels(provider, "query" if texts == 1 else "batch").observe(seconds)


def query_cache(hit: bool) -> None:
    EMBED_QUERY_CACHE.labels("hit" if hit else "miss").inc()
