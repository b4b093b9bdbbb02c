#!/usr/bin/env python
"""The command line of the load check, bench/load_check.py (its docstring is this command's help)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import load_check  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=load_check.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--embedder", default="sentence-transformers", choices=["sentence-transformers", "hashing"])
    parser.add_argument("--subjects", type=int, default=30)
    parser.add_argument("--start-rate", type=float, default=5.0, help="operations per second of the first step")
    parser.add_argument("--max-rate", type=float, default=500.0)
    parser.add_argument("--step-seconds", type=float, default=30.0)
    parser.add_argument("--max-p95", type=float, default=100.0, help="ms; a step over it is not held")
    parser.add_argument("--erase-every", type=float, default=10.0, help="seconds between two erasures under traffic")
    parser.add_argument("--resolve-every", type=float, default=3.0, help="seconds between two curator resolutions")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=ROOT / "bench-output" / "load_check.json")
    args = parser.parse_args(argv)

    if not os.environ.get("DATABASE_URL"):
        os.environ.setdefault("HAKI_PGDATA", str(ROOT / "var" / "pgdata-load"))
    from scripts._django import setup

    setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    report = load_check.run(
        embedder=args.embedder,
        subjects=args.subjects,
        start_rate=args.start_rate,
        max_rate=args.max_rate,
        step_seconds=args.step_seconds,
        max_p95=args.max_p95,
        erase_every=args.erase_every,
        resolve_every=args.resolve_every,
        seed=args.seed,
        log=args.out.with_suffix(".server.log"),
    )
    load_check.print_report(report)
    args.out.write_text(json.dumps(report, indent=1))
    print(f"written {args.out}")
    return 1 if any(report["invariants"].values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
