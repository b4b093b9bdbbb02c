#!/usr/bin/env python
"""The command line of the retrieval-quality harness, bench/recall.py (its docstring is this command's help)."""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import recall  # noqa: E402
from bench.quality_report import format_failures, format_report  # noqa: E402
from hakimem.embeddings import PROVIDERS  # noqa: E402


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=recall.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, default=recall.DEFAULT_DATASET)
    parser.add_argument("--noise-file", type=Path, default=recall.DEFAULT_NOISE)
    parser.add_argument(
        "--noise", type=int, default=recall.DEFAULT_NOISE_PER_SCOPE, help="noise facts per scope (0: none)"
    )
    parser.add_argument("--budget", type=int, default=recall.DEFAULT_BUDGET)
    parser.add_argument("--split", choices=("dev", "heldout", "all"), default="all")
    parser.add_argument("--limit-scopes", type=int, help="only the first N scopes (after --split)")
    parser.add_argument("--scopes", help="comma-separated scope ids (e.g. en-01,fr-01)")
    parser.add_argument("--embedder", choices=PROVIDERS, help="override HAKI_EMBED_PROVIDER for this run")
    parser.add_argument("--seed", type=int, default=0, help="noise sample and write order")
    parser.add_argument("--out", type=Path, default=recall.DEFAULT_OUT)
    parser.add_argument(
        "--show-failures",
        type=int,
        default=0,
        metavar="N",
        help="print the first N questions where hakimem lost gold evidence",
    )
    parser.add_argument("--quiet", action="store_true", help="no per-scope progress lines")
    args = parser.parse_args(argv)

    # SIGTERM unwinds like Ctrl-C, so the finally in run() erases what was written.
    signal.signal(signal.SIGTERM, _interrupt)
    from scripts._django import setup

    setup()
    report = recall.run(
        dataset=args.dataset,
        noise_path=args.noise_file,
        noise=args.noise,
        budget=args.budget,
        split=args.split,
        limit_scopes=args.limit_scopes,
        scope_ids=args.scopes.split(",") if args.scopes else None,
        embedder=args.embedder,
        seed=args.seed,
        progress=None if args.quiet else (lambda msg: print(msg, file=sys.stderr, flush=True)),
    )
    print(format_report(report))
    if args.show_failures:
        print()
        print(format_failures(report, args.show_failures))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")
    print(f"\nreport: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
