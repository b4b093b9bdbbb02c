#!/usr/bin/env python
"""The command line of the A/B comparison of two commits over HTTP, bench/ab.py (its docstring is this command's
help)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import ab  # noqa: E402
from hakimem.embeddings import PROVIDERS  # noqa: E402


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=ab.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    baseline = parser.add_mutually_exclusive_group(required=True)
    baseline.add_argument("--baseline", help="the commit to compare this checkout with (e.g. HEAD~1)")
    baseline.add_argument(
        "--baseline-database",
        help="instead, the database this checkout's baseline server runs on (a postgresql:// URL, or an embedded "
        "server's data folder); the other runs on DATABASE_URL / HAKI_PGDATA",
    )
    # A child of a --baseline-database run: ready this process's database, print its keys and sizes as JSON, exit.
    baseline.add_argument("--prepare", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--total", type=int, default=16_667, help="bench_http's dataset size")
    parser.add_argument("--embedder", default="sentence-transformers", choices=PROVIDERS)
    parser.add_argument("--queries", type=int, default=150, help="distinct texts per scope, each sent to both")
    parser.add_argument("--think-ms", type=float, default=30.0, help="pause after each answer")
    parser.add_argument("--scopes", help="comma-separated labels (small, ingest, mid-0, big); default all")
    parser.add_argument(
        "--tiers",
        action="store_true",
        help="tiered calls (the projects get bench_http's identity blocks and procedures)",
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--cache-dir", type=Path, default=ROOT / "var" / "bench-cache", help="the embeddings' cache")
    parser.add_argument("--out", type=Path, default=ROOT / "bench-output" / "bench_ab.json")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)

    if not os.environ.get("DATABASE_URL"):
        os.environ.setdefault("HAKI_PGDATA", str(ROOT / "var" / "pgdata-bench-http"))
    from scripts._django import setup

    setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    if args.prepare:
        ready = ab.prepare(total=args.total, embedder=args.embedder, cache_dir=args.cache_dir, seed=args.seed)
        print(json.dumps(ready))  # to the parent's pipe: the keys are never written anywhere else
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    report = ab.run(
        baseline=args.baseline,
        baseline_database=args.baseline_database,
        total=args.total,
        embedder=args.embedder,
        queries=args.queries,
        think_ms=args.think_ms,
        scopes=set(args.scopes.split(",")) if args.scopes else None,
        seed=args.seed,
        cache_dir=args.cache_dir,
        log=args.out.with_suffix(".server.log"),
        tiers=args.tiers,
    )
    args.out.write_text(json.dumps(report, indent=1))
    against = f" on {report['databases']['baseline']}" if args.baseline_database else ""
    print(
        f"baseline {report['baseline'][:10]}{against} vs checkout {report['checkout'][:10]}{report['checkout'][40:]}; load "
        f"average {report['load_avg_1m_at_start']} at start, {report['load_avg_1m_at_end']} at end; written {args.out}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
