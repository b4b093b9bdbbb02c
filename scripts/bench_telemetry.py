#!/usr/bin/env python
"""The command line of what OpenTelemetry costs a context call in process, bench/telemetry_ab.py (its docstring is
this command's help)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import telemetry_ab  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=telemetry_ab.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--total", type=int, default=5_000, help="bench.py's dataset size")
    parser.add_argument("--embedder", default="sentence-transformers", choices=["sentence-transformers", "hashing"])
    parser.add_argument(
        "--queries", type=int, default=200, help="distinct questions per scope, each sent in both modes"
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=ROOT / "bench-output" / "bench_telemetry.json")
    args = parser.parse_args(argv)

    if not os.environ.get("DATABASE_URL"):
        os.environ.setdefault("HAKI_PGDATA", str(ROOT / "var" / "pgdata-bench-otel"))
    from scripts._django import setup

    setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    report = telemetry_ab.run(
        total=args.total,
        embedder=args.embedder,
        queries=args.queries,
        seed=args.seed,
        cache_dir=ROOT / "var" / "bench-cache",
        log=args.out.with_suffix(".server.log"),
    )
    args.out.write_text(json.dumps(report, indent=1))
    print(
        f"load average {report['load_avg_1m_at_start']} at start, {report['load_avg_1m_at_end']} at end; "
        f"written {args.out}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
