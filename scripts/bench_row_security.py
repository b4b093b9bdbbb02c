#!/usr/bin/env python
"""The command line of the row-security cost benchmark, bench/row_security.py (its docstring's first paragraph is
this command's help)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import row_security  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=row_security.__doc__.split("\n\n")[0])
    parser.add_argument("--total", type=int, default=200_000, help="the --total bench.py loaded")
    parser.add_argument("--embedder", default="sentence-transformers", choices=["sentence-transformers", "hashing"])
    parser.add_argument("--queries", type=int, default=150, help="distinct questions per subject")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    if not os.environ.get("DATABASE_URL"):
        os.environ.setdefault("HAKI_PGDATA", str(ROOT / "var" / "pgdata-bench"))
    from scripts._django import setup

    setup()
    return row_security.run(total=args.total, embedder=args.embedder, queries=args.queries, seed=args.seed)


if __name__ == "__main__":
    raise SystemExit(main())
