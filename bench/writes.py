"""Fact writes as a client sees them: POST /v1/facts over HTTP, against the production server of `make run`.

    .venv/bin/python scripts/bench_writes.py                      # 10 batches of 100, then one of 500 x 8,000
    .venv/bin/python scripts/bench_writes.py --batches 5 --large 0  # the batches of 100 only
    .venv/bin/python scripts/bench_writes.py --profile 100          # in process: where 100 long facts' time goes

It starts gunicorn with config/gunicorn.py (bench/server.py's Server) on a free loopback port, against its own
embedded server (HAKI_PGDATA, default var/pgdata-bench-writes, or DATABASE_URL), with the configured embedder, and:
1. writes --batches batches of 100 short facts (bench/dataset.py's sentences, a fresh subject) and prints facts/s
   and the batch's p50/p95;
2. writes one batch of --large facts of --chars characters each (the documented maximum: 500 of 8,000), each a
   distinct run of the dataset's sentences about one cast, into a fresh subject, and prints its status and time
   beside gunicorn's worker timeout (a third of it is the margin the answer must keep); a batch answered 202 is
   followed on GET /v1/jobs/{id} until it is done or failed, and its time is the batch's to the job's end.
--profile N instead runs fact_create_batch in this process on N facts of --chars (0: short ones) under cProfile and
prints the top of its cumulative times. The subjects written are erased before each phase; loopback only, every phase bounded.
"""

from __future__ import annotations

import cProfile
import io
import logging
import os
import pstats
import time
from itertools import islice

from bench.clients import percentiles, request
from bench.server import Server, server_environment

PROJECT = "bench-writes"
WORKER_TIMEOUT_S = 60  # config/gunicorn.py's timeout


def short_texts(n: int, seed: int = 11) -> list[str]:
    from bench import dataset

    return [f["text"] for f in islice(dataset.generate_facts(max(n * 3, 1000), seed), n)]


def long_texts(n: int, chars: int, seed: int = 13) -> list[str]:
    """n distinct texts of `chars` characters, each sentences of the dataset (a conversation's worth of facts)."""
    from bench import dataset

    sentences = iter(f["text"] for f in dataset.generate_facts(n * chars // 30 + 1000, seed))
    texts = []
    for _ in range(n):
        parts, size = [], 0
        for sentence in sentences:
            parts.append(sentence)
            size += len(sentence) + 1
            if size >= chars:
                break
        texts.append(" ".join(parts)[:chars])
    return texts


def write(base: str, key: str, subject: str, texts: list[str], timeout: float) -> tuple[int, float, object]:
    body = {"facts": [{"project_id": PROJECT, "subject_id": subject, "text": t} for t in texts]}
    began = time.perf_counter()
    status, answer = request(base, "POST", "/v1/facts", body, key, timeout=timeout)
    return status, time.perf_counter() - began, answer


def run(*, batches: int, large: int, chars: int, log=None) -> dict:
    from hakimem.services import api_key_create

    _, key = api_key_create(project_id=PROJECT, label="bench_writes")
    report = {"load_avg_1m_at_start": round(os.getloadavg()[0], 2), "cores": os.cpu_count()}
    with Server(env=server_environment(_configured_embedder()), log=log) as server:
        if batches:
            subject = "batches-of-100"
            request(server.url, "DELETE", f"/v1/subjects/{subject}?project_id={PROJECT}", key=key)
            texts = short_texts(batches * 100)
            timings, errors = [], 0
            for start in range(0, len(texts), 100):
                status, seconds, _ = write(server.url, key, subject, texts[start : start + 100], 120)
                timings.append(seconds)
                errors += status != 201
            report["batches_of_100"] = {
                "batches": batches,
                "errors": errors,
                "facts_per_s": round(len(texts) / sum(timings), 1),
                "batch_ms": percentiles([t * 1000 for t in timings]),
            }
        if large:
            subject = "large-batch"
            request(server.url, "DELETE", f"/v1/subjects/{subject}?project_id={PROJECT}", key=key)
            status, seconds, answer = write(server.url, key, subject, long_texts(large, chars), 180)
            report["large_batch"] = {
                "facts": large,
                "chars": chars,
                "status": status,
                "seconds": round(seconds, 2),
                "margin_x": round(WORKER_TIMEOUT_S / seconds, 2),
                "job": answer.get("job") if isinstance(answer, dict) else None,
            }
            if status == 202 and isinstance(answer, dict):
                report["large_batch"].update(_await_job(server.url, key, answer["job"]["id"], began=seconds))
    report["load_avg_1m_at_end"] = round(os.getloadavg()[0], 2)
    return report


def _await_job(base: str, key: str, job_id: str, *, began: float, timeout: float = 900) -> dict:
    """Poll GET /v1/jobs/{id} until the job is no longer pending (bounded): its status and the seconds since the
    batch was sent."""
    started = time.perf_counter()
    answer = None
    while time.perf_counter() - started < timeout:
        status, answer = request(base, "GET", f"/v1/jobs/{job_id}", key=key)
        if status != 200 or answer["status"] != "pending":
            break
        time.sleep(0.5)
    return {
        "job_status": answer.get("status") if isinstance(answer, dict) and "status" in answer else "timeout",
        "job_error": answer.get("error") if isinstance(answer, dict) else None,
        "job_seconds": round(time.perf_counter() - started + began, 2),
    }


def _configured_embedder() -> str:
    from django.conf import settings

    return settings.HAKI_EMBED_PROVIDER


def profile(n: int, chars: int, top: int = 30) -> str:
    """fact_create_batch on n long facts in this process, under cProfile: the top of its cumulative times."""
    from facts.writes import FactInput, fact_create_batch
    from hakimem.embeddings import get_embedder
    from privacy.services import project_erase

    logging.getLogger("hakimem.facts").setLevel(logging.WARNING)  # a line per conflict set
    get_embedder().embed(["warm up"])
    project_erase(project_id=PROJECT)
    texts = long_texts(n, chars) if chars else short_texts(n)
    items = [FactInput(project_id=PROJECT, subject_id="profile", text=t) for t in texts]
    profiler = cProfile.Profile()
    began = time.perf_counter()
    profiler.enable()
    fact_create_batch(items=items, actor="bench")
    profiler.disable()
    seconds = time.perf_counter() - began
    project_erase(project_id=PROJECT)
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(top)
    return (
        f"{n} facts of {chars} characters in process: {seconds:.2f} s ({seconds / n * 1000:.0f} ms a fact)\n"
        + out.getvalue()
    )


def print_report(report: dict) -> None:
    print(f"load average (1 min) {report['load_avg_1m_at_start']} at start, {report['load_avg_1m_at_end']} at end")
    if "batches_of_100" in report:
        b = report["batches_of_100"]
        print(
            f"batches of 100 over HTTP: {b['facts_per_s']} facts/s in {b['batches']} batches "
            f"(batch p50 {b['batch_ms']['p50']} ms, p95 {b['batch_ms']['p95']} ms, {b['errors']} errors)"
        )
    if "large_batch" in report:
        b = report["large_batch"]
        line = f"one batch of {b['facts']} x {b['chars']} characters: HTTP {b['status']} in {b['seconds']} s"
        if b.get("job_status"):
            line += f", job {b['job_status']} after {b['job_seconds']} s"
        else:
            line += f" ({b['margin_x']}x under the {WORKER_TIMEOUT_S} s worker timeout; target 3x)"
        print(line)
