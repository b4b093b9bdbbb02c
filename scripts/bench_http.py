#!/usr/bin/env python
"""The command line of the HTTP benchmark, bench/over_http.py (its docstring is this command's help)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import clients, over_http  # noqa: E402
from hakimem.embeddings import PROVIDERS  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=over_http.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--total", type=int, default=16_667, help="facts loaded (16667: a 10k scope; 200000: 100k)")
    parser.add_argument("--embedder", default="sentence-transformers", choices=PROVIDERS)
    parser.add_argument("--queries", type=int, default=200, help="1-client calls per scope (distinct texts)")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--duration", type=float, default=20.0, help="seconds of the concurrent phase per scope")
    parser.add_argument("--ingest-batches", type=int, default=10, help="batches of 100 facts: the ingested scope")
    parser.add_argument("--server", choices=["gunicorn", "runserver"], default="gunicorn")
    parser.add_argument("--workers", type=int, help="HAKI_WORKERS (default: config/gunicorn.py's)")
    parser.add_argument("--threads", type=int, help="HAKI_THREADS (default: config/gunicorn.py's)")
    parser.add_argument("--no-keepalive", action="store_true", help="a new connection for every request")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--reload", action="store_true", help="reload the dataset even if it is there")
    parser.add_argument(
        "--tiers",
        action="store_true",
        help="per scope, also 1-client tiered calls (tiers: true) beside plain ones, and their ratio",
    )
    parser.add_argument(
        "--think-ms",
        type=float,
        default=0.0,
        help="also per scope, 1-client calls this far apart (an application waits for its LLM between "
        "two turns): the server's work after each answer, the trace write, is then done",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "bench-output" / "bench_http.json")
    args = parser.parse_args(argv)

    clients.KEEPALIVE = not args.no_keepalive
    if not os.environ.get("DATABASE_URL"):
        os.environ.setdefault("HAKI_PGDATA", str(ROOT / "var" / "pgdata-bench-http"))
    from scripts._django import setup

    setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    report = over_http.run(
        total=args.total,
        embedder=args.embedder,
        queries=args.queries,
        clients=args.clients,
        duration=args.duration,
        ingest_batches=args.ingest_batches,
        server_kind=args.server,
        workers=args.workers,
        threads=args.threads,
        seed=args.seed,
        reload=args.reload,
        log=args.out.with_suffix(".server.log"),
        tiers=args.tiers,
        think_ms=args.think_ms,
    )
    over_http.print_report(report)
    args.out.write_text(json.dumps(report, indent=1))
    print(f"written {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
