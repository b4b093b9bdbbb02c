#!/usr/bin/env python
"""The command line of the write benchmark, bench/writes.py (its docstring is this command's help)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import writes  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=writes.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, default=10, help="batches of 100 short facts")
    parser.add_argument("--large", type=int, default=500, help="facts in the large batch (0: none)")
    parser.add_argument("--chars", type=int, default=8000, help="characters of each fact of the large batch")
    parser.add_argument("--profile", type=int, metavar="N", help="in process, N long facts under cProfile instead")
    parser.add_argument("--out", type=Path, default=ROOT / "bench-output" / "bench_writes.json")
    args = parser.parse_args(argv)

    if not os.environ.get("DATABASE_URL"):
        os.environ.setdefault("HAKI_PGDATA", str(ROOT / "var" / "pgdata-bench-writes"))
    from scripts._django import setup

    setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    if args.profile:
        print(writes.profile(args.profile, args.chars))
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    report = writes.run(
        batches=args.batches, large=args.large, chars=args.chars, log=args.out.with_suffix(".server.log")
    )
    writes.print_report(report)
    args.out.write_text(json.dumps(report, indent=1))
    print(f"written {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
