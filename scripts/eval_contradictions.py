#!/usr/bin/env python
"""Contradiction harness (bench/contradictions.py): every pair of eval/contradictions/pairs.jsonl through the write
path, in process, on the embedded PostgreSQL of HAKI_PGDATA (default var/pgdata-eval).

    .venv/bin/python scripts/eval_contradictions.py [--split dev|test|all] [--embedder multilingual-e5-small]
        [--ids en-res-01,fr-age-02] [--json PATH] [--show-errors]

Prints, per language and overall, recall on contradictions (a conflict set opened), the false-set rate on
compatible pairs, the pairs de-duplicated, the misses per category and style, and the time it took.
--json writes the report with one record per pair (outcome, rule, cosine similarity of the two facts).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("HAKI_PGDATA", str(ROOT / "var" / "pgdata-eval"))
sys.path.insert(0, str(ROOT))  # before scripts/, whose bench.py would shadow the bench package
from hakimem.embeddings import PROVIDERS  # noqa: E402


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=Path, help="default eval/contradictions/pairs.jsonl")
    parser.add_argument("--split", choices=("dev", "test", "all"), default="all")
    parser.add_argument("--ids", help="comma-separated pair ids (after --split)")
    parser.add_argument(
        "--embedder",
        choices=PROVIDERS,
        help="override HAKI_EMBED_PROVIDER, and with it the thresholds (default: the configured one)",
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the report with per-pair outcomes")
    parser.add_argument("--show-errors", action="store_true", help="print the misclassified pairs")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    parser.add_argument("--verbose", action="store_true", help="keep the write path's log lines (a line per set)")
    args = parser.parse_args(argv)

    signal.signal(signal.SIGTERM, _interrupt)  # unwinds like Ctrl-C: run() erases its project
    from scripts._django import setup

    setup()
    if not args.verbose:
        logging.getLogger("hakimem.facts").setLevel(logging.WARNING)
    from django.core.management import call_command

    from bench.contradictions import DEFAULT_PAIRS, format_errors, format_report, run

    call_command("migrate", verbosity=0)  # a new data folder has no tables yet
    report = run(
        pairs_path=args.pairs or DEFAULT_PAIRS,
        split=args.split,
        ids=args.ids.split(",") if args.ids else None,
        embedder=args.embedder,
        progress=None if args.quiet else (lambda msg: print(msg, file=sys.stderr, flush=True)),
    )
    print(format_report(report))
    if args.show_errors:
        print("\nmisclassified pairs\n" + format_errors(report))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")
        print(f"\nreport: {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
