"""The performance benchmark of the context path and of ingestion.

    python scripts/bench.py                                    # 200k facts, MiniLM, the full run
    python scripts/bench.py --total 1000000                    # the same at 1M facts in the table
    python scripts/bench.py --total 5000 --embedder hashing    # a quick run (what the test suite runs)

It runs against its own embedded server (var/pgdata-bench, or HAKI_PGDATA / DATABASE_URL): loading
replaces project "bench" and locks the tables while the hnsw indexes are rebuilt, so never point it at a
database in use. The dataset is loaded only when the database does not already hold it (--reload forces).

Measured, for the 100k-fact subject, a 10k one, a ~50-fact one and the ~1k-fact subject that (e) ingests
(10 batches of 100), each over --queries distinct questions:
 (a) POST /v1/context end to end through Django (auth, validation, embedding, assembly, trace write);
 (b) the assembler alone, its query vector already computed (the embedding cache is warmed first);
 (c) the naive baseline in the same process: one SQL query scoring every active fact of the scope, and
     the ratio (c)/(b);
 (d) phase-1 recall: the share of the exact hybrid top-20 (brute force, query (c)) present among the
     two-phase candidates;
 (g) the trace write's share of the assembler's time;
and once: (e) ingest throughput through POST /v1/facts in batches of 100 (embedding and conflict detection
included), (f) this process's peak RSS (it is the server: requests run in-process through Django's stack).
Prints a table and writes JSON (--out).
"""

from __future__ import annotations

import json
import os
import resource
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

TOP_N = 20
SMALL_TARGET = 50


def _percentiles(values: list[float]) -> dict:
    arr = np.array(values)
    return {
        "n": len(values),
        "p50": round(float(np.percentile(arr, 50)), 2),
        "p95": round(float(np.percentile(arr, 95)), 2),
        "p99": round(float(np.percentile(arr, 99)), 2),
        "mean": round(float(arr.mean()), 2),
    }


def _subjects(total: int, seed: int) -> tuple[dict[str, str], dict[str, int]]:
    from bench import dataset

    sizes = dict(dataset.subject_sizes(total, seed))
    small = min((s for s in sizes if s.startswith("s-")), key=lambda s: (abs(sizes[s] - SMALL_TARGET), s))
    mid = "mid-0" if "mid-0" in sizes else None
    chosen = {"big": "big", "small": small}
    if mid:
        chosen["mid"] = mid
    return chosen, sizes


# The naive full scan: every active fact of the scope scored in SQL with the assembler's own formula (no
# index can order a sum); {text_rank} and {recency} are the assembler's (context.retrieval_sql).
NAIVE_SQL = """
SELECT f.id,
       %(w_similarity)s * (1 - (f.embedding <=> %(qvec)s::halfvec))
     + %(w_text)s * {text_rank}
     + %(w_recency)s * {recency} AS score
  FROM facts_fact f
 WHERE f.project_id = %(project_id)s AND f.subject_id = %(subject_id)s AND f.status = 'active'
   AND (f.valid_to IS NULL OR f.valid_to > %(now)s)
 ORDER BY score DESC
 LIMIT %(n)s
"""


def naive_top(subject: str, query: str, qvec, now) -> list:
    """The naive full scan: every active fact of the scope scored in SQL (no index can order a sum)."""
    from django.db import connection

    from context import retrieval, retrieval_sql
    from facts.selectors import volatility_cutoffs
    from hakimem.embeddings import vector_literal
    from bench import dataset

    lookup = retrieval.lookup_for(
        project_id=dataset.PROJECT, subject_id=subject, query=query, now=now, cutoffs=volatility_cutoffs(now)
    )
    with connection.cursor() as cursor:
        cursor.execute(
            NAIVE_SQL.format(text_rank=retrieval_sql.text_rank_sql("f"), recency=retrieval_sql.RECENCY),
            {**lookup.params(lookup.fact_text), "qvec": vector_literal(qvec), "n": TOP_N},
        )
        return [row[0] for row in cursor.fetchall()]


def bench_subject(label, subject, queries, client, auth) -> dict:
    from django.utils import timezone

    from context import assembler, retrieval
    from facts.selectors import volatility_cutoffs
    from hakimem.embeddings import get_embedder
    from bench import dataset
    import traces.services as trace_services

    embedder = get_embedder()
    end_to_end, assembler_only, naive, trace_ms, recalls = [], [], [], [], []

    # (a) end to end: each query is new to the process, so the embedding is paid every time
    for query in queries:
        started = time.perf_counter()
        response = client.post(
            "/v1/context",
            data=json.dumps(
                {"project_id": dataset.PROJECT, "subject_id": subject, "query": query, "budget_tokens": 900}
            ),
            content_type="application/json",
            HTTP_AUTHORIZATION=auth,
        )
        end_to_end.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, response.content

    # (b) + (g): the assembler with the query vector already cached; the trace write timed inside it
    original = trace_services.trace_record

    def timed_trace_record(**kwargs):
        started = time.perf_counter()
        try:
            return original(**kwargs)
        finally:
            trace_ms.append((time.perf_counter() - started) * 1000)

    assembler.trace_record = timed_trace_record
    try:
        for query in queries:
            embedder.embed_query(query, project_id=dataset.PROJECT)  # warm: (b) excludes embedding
            started = time.perf_counter()
            assembler.context_assemble(project_id=dataset.PROJECT, subject_id=subject, query=query, budget_tokens=900)
            assembler_only.append((time.perf_counter() - started) * 1000)
    finally:
        assembler.trace_record = original

    # (c) the naive baseline and (d) phase-1 recall of the exact hybrid top-20
    for query in queries:
        qvec = embedder.embed_query(query, project_id=dataset.PROJECT)
        now = timezone.now()
        started = time.perf_counter()
        exact = naive_top(subject, query, qvec, now)
        naive.append((time.perf_counter() - started) * 1000)
        lookup = retrieval.lookup_for(
            project_id=dataset.PROJECT, subject_id=subject, query=query, now=now, cutoffs=volatility_cutoffs(now)
        )
        candidates = {c.id for c in retrieval.fact_candidates(lookup, qvec=qvec)}
        if exact:
            recalls.append(len(set(exact) & candidates) / len(exact))

    a, b, c = _percentiles(end_to_end), _percentiles(assembler_only), _percentiles(naive)
    return {
        "subject": subject,
        "end_to_end_ms": a,
        "assembler_ms": b,
        "naive_full_scan_ms": c,
        "speedup_vs_naive_p50": round(c["p50"] / b["p50"], 1),
        "speedup_vs_naive_p95": round(c["p95"] / b["p95"], 1),
        "phase1_recall_top20": round(float(np.mean(recalls)), 4) if recalls else None,
        "phase1_recall_min": round(float(np.min(recalls)), 4) if recalls else None,
        "trace_write_ms": _percentiles(trace_ms),
        "trace_share_of_assembler": round(float(np.sum(trace_ms) / np.sum(assembler_only)), 3),
    }


def bench_ingest(client, auth, batches: int, seed: int, queries: int) -> tuple[dict, dict | None]:
    """(e) POST /v1/facts in batches of 100 into a fresh subject; then, while it is there, the context call
    measured on it as on the others (with 10 batches: the ~1k-fact scope, most users' size), then erase it.
    Returns the ingest figures and that scope's (None for fewer than 2 batches)."""
    from django.db import connection

    from bench import dataset

    subject = f"ingest-{os.getpid()}"
    texts = [f["text"] for f in dataset.generate_facts(120_000, seed + 1) if f["subject_id"] == "big"][: batches * 100]
    timings, scope = [], None
    try:
        for i in range(batches):
            body = {
                "facts": [
                    {"project_id": dataset.PROJECT, "subject_id": subject, "text": t}
                    for t in texts[i * 100 : (i + 1) * 100]
                ]
            }
            started = time.perf_counter()
            response = client.post(
                "/v1/facts", data=json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=auth
            )
            timings.append(time.perf_counter() - started)
            assert response.status_code == 201, response.content
        if batches >= 2:
            with connection.cursor() as cursor:  # the planner's statistics, as autovacuum would leave them
                cursor.execute("ANALYZE facts_fact")
            # the ingested texts are the first facts of "big" drawn with seed + 1: its cast, its questions
            scope = bench_subject(
                "1k", subject, dataset.generate_queries(queries, seed + 1, subject_id="big"), client, auth
            )
            scope["facts_in_scope"] = batches * 100
    finally:
        client.delete(f"/v1/subjects/{subject}?project_id={dataset.PROJECT}", HTTP_AUTHORIZATION=auth)
    return (
        {
            "batches": batches,
            "batch_size": 100,
            "facts_per_s": round(batches * 100 / sum(timings), 1),
            "batch_ms": _percentiles([t * 1000 for t in timings]),
        },
        scope,
    )


def run(
    *,
    total: int,
    embedder: str,
    queries: int,
    ingest_batches: int,
    seed: int = 7,
    reload: bool = False,
    cache_dir: Path = ROOT / "var" / "bench-cache",
) -> dict:
    from django.conf import settings
    from django.db import connection
    from django.test import Client

    from hakimem.services import api_key_create
    from bench import dataset, loader

    settings.HAKI_EMBED_PROVIDER = embedder
    report = {"total": total, "embedder": embedder, "queries_per_subject": queries}
    if reload or not loader.loaded(total, seed):
        report["load"] = loader.load(total, embedder, cache_dir, seed)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_relation_size('facts_fact_embedding_hnsw'), pg_relation_size('facts_fact'),"
            " current_setting('shared_buffers')"
        )
        hnsw_bytes, heap_bytes, shared_buffers = cursor.fetchone()
    report["hnsw_index_mb"] = round(hnsw_bytes / 2**20, 1)
    report["facts_heap_mb"] = round(heap_bytes / 2**20, 1)
    report["shared_buffers"] = shared_buffers

    chosen, sizes = _subjects(total, seed)
    _, raw_key = api_key_create(project_id=dataset.PROJECT, label="benchmark")
    auth = f"Bearer {raw_key}"
    client = Client()
    # one warm-up call per subject: model load, connection set-up, first touches of the indexes
    for subject in chosen.values():
        client.post(
            "/v1/context",
            data=json.dumps({"project_id": dataset.PROJECT, "subject_id": subject, "query": "warm up"}),
            content_type="application/json",
            HTTP_AUTHORIZATION=auth,
        )
    report["subjects"] = {}
    for label, subject in chosen.items():
        qs = dataset.generate_queries(queries, seed, subject_id=subject)
        result = bench_subject(label, subject, qs, client, auth)
        result["facts_in_scope"] = sizes[subject]
        report["subjects"][label] = result
    report["ingest"], ingested = bench_ingest(client, auth, ingest_batches, seed, queries)
    if ingested:
        report["subjects"]["1k"] = ingested
    report["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return report


def print_report(report: dict) -> None:
    print(
        f"\nhakimem benchmark: {report['total']} facts in the table, embedder {report['embedder']}, "
        f"hnsw {report['hnsw_index_mb']} MB, shared_buffers {report['shared_buffers']}"
    )
    print(
        f"{'scope':>7} {'facts':>7} | {'e2e p50':>8} {'p95':>7} {'p99':>7} | {'asm p50':>8} {'p95':>7} {'p99':>7} | "
        f"{'naive p50':>9} {'p95':>7} | {'x naive':>7} | {'recall@20':>9} | {'trace %':>7}"
    )
    for label, s in report["subjects"].items():
        e, a, n = s["end_to_end_ms"], s["assembler_ms"], s["naive_full_scan_ms"]
        print(
            f"{label:>7} {s['facts_in_scope']:>7} | {e['p50']:>8} {e['p95']:>7} {e['p99']:>7} | {a['p50']:>8} {a['p95']:>7} "
            f"{a['p99']:>7} | {n['p50']:>9} {n['p95']:>7} | {s['speedup_vs_naive_p50']:>7} | {s['phase1_recall_top20']:>9} | "
            f"{s['trace_share_of_assembler'] * 100:>6.1f}%"
        )
    ingest = report["ingest"]
    print(
        f"ingest: {ingest['facts_per_s']} facts/s in batches of {ingest['batch_size']} "
        f"(batch p50 {ingest['batch_ms']['p50']} ms); peak RSS {report['peak_rss_mb']} MB"
    )
