"""The command line of the query-time contradiction detection benchmark, bench/contradiction_cost.py
(its docstring is this command's help)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("HAKI_PGDATA", str(ROOT / "var" / "pgdata-bench-contra"))
sys.path.insert(0, str(ROOT))

from scripts import _django  # noqa: E402

_django.setup()

from bench import contradiction_cost  # noqa: E402


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=contradiction_cost.__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=40)
    args = parser.parse_args(argv)
    contradiction_cost.run(queries=args.queries)


if __name__ == "__main__":
    main()
