"""The command line of the replay benchmark, bench/replay_cost.py (its docstring is this command's help)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("HAKI_PGDATA", str(ROOT / "var" / "pgdata-bench-replay"))
os.environ.setdefault("HAKI_EMBED_PROVIDER", "hashing")
sys.path.insert(0, str(ROOT))

from scripts import _django  # noqa: E402

_django.setup()

from bench import replay_cost  # noqa: E402


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=replay_cost.__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--sizes", default="200,2000,10000")
    args = parser.parse_args(argv)
    replay_cost.run(calls=args.calls, sizes=args.sizes)


if __name__ == "__main__":
    main()
