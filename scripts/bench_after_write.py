#!/usr/bin/env python
"""The command line of bench/after_write.py (its docstring is this command's help)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import after_write  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=after_write.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--facts", type=int, default=5_000, help="facts written over HTTP, in batches of 100")
    parser.add_argument("--calls", type=int, default=200, help="1-client calls right after, and again once settled")
    parser.add_argument("--embedder", default="sentence-transformers", choices=["sentence-transformers", "hashing"])
    parser.add_argument("--think-ms", type=float, default=30.0, help="pause after each answer")
    parser.add_argument("--total", type=int, default=16_667, help="bench_http's dataset size")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=ROOT / "bench-output" / "bench_after_write.json")
    args = parser.parse_args(argv)

    if not os.environ.get("DATABASE_URL"):
        os.environ.setdefault("HAKI_PGDATA", str(ROOT / "var" / "pgdata-bench-http"))
    from scripts._django import setup

    setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    report = after_write.run(
        facts=args.facts,
        calls=args.calls,
        embedder=args.embedder,
        think_ms=args.think_ms,
        seed=args.seed,
        total=args.total,
        log=args.out.with_suffix(".server.log"),
    )
    after_write.print_report(report)
    args.out.write_text(json.dumps(report, indent=1))
    print(f"written {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
