"""The command line of the stats overview benchmark, bench/stats_overview.py
(its docstring is this command's help)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scripts import _django  # noqa: E402

_django.setup()

from bench import stats_overview  # noqa: E402


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=stats_overview.__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--keep", action="store_true", help="leave the project's rows in the database")
    parser.add_argument("--reuse", action="store_true", help="use the rows an earlier --keep run left")
    parser.add_argument("--reuse-rollup", action="store_true", help="and its rollup, not built again")
    args = parser.parse_args(argv)
    stats_overview.run(
        keep=args.keep, reuse=args.reuse, reuse_rollup=args.reuse_rollup, runs=args.runs, traces=args.traces
    )


if __name__ == "__main__":
    main()
