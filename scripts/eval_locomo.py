#!/usr/bin/env python
"""The command line of the LoCoMo harness, bench/locomo.py (its docstring is this command's help)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import locomo  # noqa: E402
from hakimem.embeddings import PROVIDERS  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=locomo.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=locomo.DEFAULT_DATA)
    parser.add_argument("--modes", default=",".join(locomo.MODES), help="comma-separated: " + ", ".join(locomo.MODES))
    parser.add_argument(
        "--budget",
        default=str(locomo.DEFAULT_BUDGET),
        help="tokens, or several comma-separated (300,900): the conversations are written once for all",
    )
    parser.add_argument("--embedder", choices=PROVIDERS, help="override HAKI_EMBED_PROVIDER")
    parser.add_argument("--samples", help="comma-separated sample ids (default: all)")
    parser.add_argument("--max-questions", type=int, default=0, help="questions per conversation (0: all)")
    parser.add_argument("--inspect", action="store_true", help="read each trace: why gold turns were not served")
    parser.add_argument(
        "--keep", action="store_true", help="leave each mode's project (memory and traces) in the database, not erased"
    )
    parser.add_argument(
        "--analyze",
        action="store_true",
        help="analyse the ranked tables after each conversation is written and wait until calls read them",
    )
    parser.add_argument("--out", type=Path, default=locomo.DEFAULT_OUT)
    args = parser.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    unknown = [m for m in modes if m not in locomo.MODES]
    if unknown:
        parser.error(f"unknown modes: {unknown}")
    try:
        budgets = [int(b) for b in args.budget.split(",") if b]
    except ValueError:
        parser.error(f"--budget: not a comma-separated list of integers: {args.budget!r}")
    if not budgets or min(budgets) <= 0:
        parser.error("--budget: at least one budget, each above 0")
    if not args.data.exists():
        parser.error(f"no LoCoMo data at {args.data} (set --data or HAKI_LOCOMO_DATA)")

    from scripts import _django

    _django.setup()
    import json

    reports = locomo.run_budgets(
        budgets=budgets,
        data=args.data,
        modes=modes,
        embedder=args.embedder,
        samples=args.samples.split(",") if args.samples else None,
        max_questions=args.max_questions,
        inspect=args.inspect,
        keep=args.keep,
        analyze=args.analyze,
        progress=lambda msg: print(msg, file=sys.stderr, flush=True),
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for report in reports:
        # one budget keeps --out as given; several write <stem>-<budget><suffix> each
        out = args.out if len(reports) == 1 else args.out.with_stem(f"{args.out.stem}-{report['config']['budget']}")
        print(locomo.format_report(report))
        out.write_text(json.dumps(report, indent=1, default=str), encoding="utf-8")
        print(f"\ndetails: {out}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
