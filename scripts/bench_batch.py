"""The command line of the batch write-lock benchmark, bench/batch_lock.py (what it measures: its docstring)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scripts import _django  # noqa: E402

_django.setup()

from bench import batch_lock  # noqa: E402


def main(argv=None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="50,100,200")
    parser.add_argument("--chars", type=int, default=7000)
    args = parser.parse_args(argv)
    batch_lock.run(chars=args.chars, sizes=args.sizes)


if __name__ == "__main__":
    main()
