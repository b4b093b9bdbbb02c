#!/usr/bin/env python
"""The command line of the in-process benchmark, bench/in_process.py (its docstring is this command's help)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import in_process  # noqa: E402
from hakimem.embeddings import PROVIDERS  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=in_process.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--total", type=int, default=200_000, help="facts in the table (1000000 for the 1M run)")
    parser.add_argument("--embedder", default="sentence-transformers", choices=PROVIDERS)
    parser.add_argument("--queries", type=int, default=200, help="distinct queries per subject")
    parser.add_argument("--ingest-batches", type=int, default=10)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--reload", action="store_true", help="reload the dataset even if it is there")
    parser.add_argument("--out", type=Path, default=ROOT / "bench-output" / "bench.json")
    args = parser.parse_args(argv)

    if not os.environ.get("DATABASE_URL"):
        os.environ.setdefault("HAKI_PGDATA", str(ROOT / "var" / "pgdata-bench"))
    from scripts._django import setup

    setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    report = in_process.run(
        total=args.total,
        embedder=args.embedder,
        queries=args.queries,
        ingest_batches=args.ingest_batches,
        seed=args.seed,
        reload=args.reload,
    )
    in_process.print_report(report)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    print(f"written {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
