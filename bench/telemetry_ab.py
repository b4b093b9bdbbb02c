"""What OpenTelemetry costs a context call, in process: the assembler (scripts/bench.py's figure (b): the query vector
already in the cache, the trace written before returning) with no exporter set up, as every process runs while
OTEL_EXPORTER_OTLP_ENDPOINT is unset, and with one exporting by OTLP over HTTP to a collector on the loopback.

    python scripts/bench_telemetry.py                                  # 5,000 facts, MiniLM (cached in var/bench-cache)
    python scripts/bench_telemetry.py --embedder hashing --queries 100 # a quick run

1. loads bench.py's dataset (--total facts) into its own data folder (var/pgdata-bench-otel) when it is missing;
2. starts a collector that answers OTLP/HTTP and keeps nothing (another process), and gunicorn as `make run` does
   (one worker) for the floor's liveness probe, and measures the floor as docs/performance.md says: embedding one
   question in this process with the configured embedder (p50) + `GET /v1/health/live` through that server (p50);
3. per scope (the dataset's largest subject and a ~50-fact one), sends each of --queries distinct questions once with
   spans off and once on, in random order, each vector embedded first (the embedding is the floor's, not this);
4. prints each mode's p50 / p95 as milliseconds and multiples of the floor, the ratio on/off, and the cost of the
   no-op spans an unset call goes through, timed alone (what the code adds to a call against its version without
   telemetry); writes JSON (--out).
Switching spans on and off between two calls of one process swaps the tracer telemetry.setup() built: the same
provider and batch processor stay up for the whole run, as in a worker.
"""

from __future__ import annotations

import logging
import os
import random
import subprocess
import sys
import textwrap
import time
import timeit
from pathlib import Path

from bench.clients import percentiles
from bench.floor import FLOOR_SAMPLES, fig, floor_line, floor_measure, floor_questions, to_floor
from bench.server import Server, free_port, server_environment

ROOT = Path(__file__).resolve().parent.parent
BUDGET_TOKENS = 900
SMALL_SCOPE_FACTS = 50

# An OTLP/HTTP receiver that answers 200 to every export and keeps nothing: the exporter's cost is the process's own.
_COLLECTOR = textwrap.dedent("""
    import sys
    from http.server import BaseHTTPRequestHandler, HTTPServer

    class Sink(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    HTTPServer(("127.0.0.1", int(sys.argv[1])), Sink).serve_forever()
""")


def _scopes(total: int, seed: int) -> list[tuple[str, str, int]]:
    from bench import dataset

    sizes = dataset.subject_sizes(total, seed)
    big = max(sizes, key=lambda s: s[1])
    small = min(sizes, key=lambda s: abs(s[1] - SMALL_SCOPE_FACTS))
    return [("small", small[0], small[1]), ("big", big[0], big[1])]


def noop_cost_us(samples: int = 200_000) -> float:
    """What an unset call adds: the spans it opens (the call's and its trace write's) and the checks it makes (two
    `recording`, one per lap of the timer), in microseconds per call."""
    from hakimem import telemetry

    assert not telemetry.enabled()

    def one_call():
        with telemetry.span("hakimem.context", project_id="p", budget_tokens=900, tiered=False, replay=False) as span:
            on_lap = span.phase if span.recording else None
            for _ in range(8):  # the laps of a plain call, at most
                if on_lap is not None:
                    on_lap()
            if span.recording:
                pass
            with telemetry.span("hakimem.context.trace_write", parent=span, trace_id="t", project_id="p"):
                pass

    return round(min(timeit.repeat(one_call, number=samples, repeat=5)) / samples * 1e6, 3)


def run(*, total: int, embedder: str, queries: int, seed: int, cache_dir: Path, log: Path) -> dict:
    from django.conf import settings

    from bench import dataset, loader
    from context.assembler import context_assemble
    from hakimem import telemetry
    from hakimem.embeddings import get_embedder

    settings.HAKI_EMBED_PROVIDER = embedder
    report = {
        "total": total,
        "embedder": embedder,
        "queries": queries,
        "cores": os.cpu_count(),
        "load_avg_1m_at_start": round(os.getloadavg()[0], 2),
    }
    logging.getLogger("hakimem.context").setLevel(logging.WARNING)  # one line per call: not this run's figures
    load = loader.ensure_loaded(total, embedder, cache_dir, seed)
    if load:
        report["load"] = load

    collector_port = free_port()
    collector = subprocess.Popen([sys.executable, "-c", _COLLECTOR, str(collector_port)])
    try:
        os.environ[telemetry.ENDPOINT] = f"http://127.0.0.1:{collector_port}"
        telemetry.shutdown()
        assert telemetry.setup()
        tracer = telemetry._tracer
        telemetry._tracer = None  # off, as while the variable is unset
        report["noop_us_per_call"] = noop_cost_us()

        sent: set[str] = set()
        with Server(
            env={**server_environment(embedder), "HAKI_WORKERS": "1", telemetry.ENDPOINT: ""}, log=log
        ) as server:
            floor_texts = floor_questions(FLOOR_SAMPLES, seed, sent)
            sent.update(floor_texts)
            report["floor"] = floor_measure([server.url], floor_texts)
        floor_ms = report["floor"]["floor_ms"]
        print(floor_line(report["floor"]), file=sys.stderr, flush=True)

        rng = random.Random(seed)
        embed = get_embedder()
        report["scopes"] = {}
        for label, subject, facts in _scopes(total, seed):
            texts = [
                q for q in dataset.generate_queries(4 * queries + 20, seed + 11, subject_id=subject) if q not in sent
            ][: queries + 10]
            sent.update(texts)
            timings: dict[str, list[float]] = {"off": [], "on": []}
            for i, text in enumerate(texts):
                embed.embed_query(text, project_id=dataset.PROJECT)
                order = ["off", "on"]
                rng.shuffle(order)
                for mode in order:
                    telemetry._tracer = tracer if mode == "on" else None
                    started = time.perf_counter()
                    context_assemble(
                        project_id=dataset.PROJECT, subject_id=subject, query=text, budget_tokens=BUDGET_TOKENS
                    )
                    if i >= 10:  # the first ten warm both
                        timings[mode].append((time.perf_counter() - started) * 1000)
                telemetry._tracer = None
            result = {"subject": subject, "facts": facts, **{m: percentiles(v) for m, v in timings.items()}}
            for mode in ("off", "on"):
                result[f"{mode}_x_floor"] = to_floor(result[mode], floor_ms)
            result["on_over_off_p50"] = round(result["on"]["p50"] / result["off"]["p50"], 3)
            report["scopes"][label] = result
            print(
                f"{label} ({facts} facts): spans off {fig(result['off'], 'p50', floor_ms)} "
                f"{fig(result['off'], 'p95', floor_ms)}; on (OTLP) {fig(result['on'], 'p50', floor_ms)} "
                f"{fig(result['on'], 'p95', floor_ms)}; on/off p50 {result['on_over_off_p50']}",
                file=sys.stderr,
                flush=True,
            )
        telemetry._tracer = tracer
        telemetry.shutdown()  # exports what the batch processor holds
    finally:
        collector.terminate()
        collector.wait(10)
    off_p50 = min(s["off"]["p50"] for s in report["scopes"].values())
    print(
        f"the no-op spans of a call with no exporter: {report['noop_us_per_call']} µs, "
        f"{report['noop_us_per_call'] / 1000 / off_p50:.4%} of the fastest scope's p50, "
        f"{report['noop_us_per_call'] / 1000 / floor_ms:.4%} of the floor",
        file=sys.stderr,
    )
    report["load_avg_1m_at_end"] = round(os.getloadavg()[0], 2)
    return report
