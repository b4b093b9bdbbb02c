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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=ab.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", required=True, help="the commit to compare this checkout with (e.g. HEAD~1)")
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
    parser.add_argument("--out", type=Path, default=ROOT / "bench-output" / "bench_ab.json")
    args = parser.parse_args(argv)

    if not os.environ.get("DATABASE_URL"):
        os.environ.setdefault("HAKI_PGDATA", str(ROOT / "var" / "pgdata-bench-http"))
    from scripts._django import setup

    setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    report = ab.run(
        baseline=args.baseline,
        total=args.total,
        embedder=args.embedder,
        queries=args.queries,
        think_ms=args.think_ms,
        scopes=set(args.scopes.split(",")) if args.scopes else None,
        seed=args.seed,
        log=args.out.with_suffix(".server.log"),
        tiers=args.tiers,
    )
    args.out.write_text(json.dumps(report, indent=1))
    print(
        f"baseline {report['baseline'][:10]} vs checkout {report['checkout'][:10]}{report['checkout'][40:]}; load "
        f"average {report['load_avg_1m_at_start']} at start, {report['load_avg_1m_at_end']} at end; written {args.out}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
