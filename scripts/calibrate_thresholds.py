#!/usr/bin/env python
"""The command line of the thresholds' calibration, bench/thresholds.py (its docstring is this command's help)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import locomo, thresholds  # noqa: E402
from hakimem.embeddings import PROVIDERS  # noqa: E402
from scripts._django import setup  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=thresholds.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--embedder", choices=PROVIDERS, required=True, help="the embedder to carry them to")
    parser.add_argument("--locomo", type=Path, default=locomo.DEFAULT_DATA, help="LoCoMo's development conversations")
    parser.add_argument("--noise", type=int, default=120, help="noise facts per EN/FR scope (eval_recall's)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    setup()
    report = thresholds.calibrate(
        provider=args.embedder,
        locomo=args.locomo if args.locomo.exists() else None,
        noise=args.noise,
        seed=args.seed,
    )
    print(thresholds.format_report(report))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
