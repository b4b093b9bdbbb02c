"""The command line of the trace write benchmark, bench/trace_write.py (its docstring is this command's help)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("HAKI_PGDATA", str(ROOT / "var" / "pgdata-bench-tw"))
os.environ.setdefault("HAKI_EMBED_PROVIDER", "hashing")
sys.path.insert(0, str(ROOT))

from scripts import _django  # noqa: E402

_django.setup()

from bench import trace_write  # noqa: E402


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=trace_write.__doc__.split("\n\n")[0])
    parser.add_argument("--writes", type=int, default=500)
    parser.add_argument("--decisions", type=int, default=150)
    parser.add_argument("--served", type=int, default=15, help="decisions included or multi-hop per call")
    parser.add_argument(
        "--compare-access",
        action="store_true",
        help="alternate blocks of writes with and without the access count upsert",
    )
    args = parser.parse_args(argv)
    trace_write.run(
        compare_access=args.compare_access, decisions=args.decisions, served=args.served, writes=args.writes
    )


if __name__ == "__main__":
    main()
