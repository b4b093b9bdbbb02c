#!/usr/bin/env python
"""The command line of bench/move_check.py (its docstring is this command's help): snapshot a database's rows and
context packets, then compare two snapshots, before and after a move (docs/scaling.md)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import move_check  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=move_check.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    actions = parser.add_subparsers(dest="action", required=True)
    taking = actions.add_parser("snapshot", help="the configured database's rows and context packets")
    taking.add_argument("--out", type=Path, required=True)
    taking.add_argument("--calls", type=int, default=10, help="traced calls asked again per project")
    taking.add_argument("--embedder", help="override HAKI_EMBED_PROVIDER (the one the data was written with)")
    comparing = actions.add_parser("compare", help="two snapshots: exit 1 on any difference")
    comparing.add_argument("before", type=Path)
    comparing.add_argument("after", type=Path)
    args = parser.parse_args(argv)
    if args.action == "compare":
        before, after = (json.loads(p.read_text(encoding="utf-8")) for p in (args.before, args.after))
        print(move_check.summary(before, after))
        return 1 if move_check.compare(before, after) else 0
    from scripts import _django

    _django.setup()
    from django.test.utils import override_settings

    with override_settings(**({"HAKI_EMBED_PROVIDER": args.embedder} if args.embedder else {})):
        taken = move_check.snapshot(calls_per_project=args.calls)
    move_check.write(args.out, taken)
    print(f"{args.out}: {len(taken['tables'])} tables, {len(taken['calls'])} context calls")
    return 0


if __name__ == "__main__":
    sys.exit(main())
