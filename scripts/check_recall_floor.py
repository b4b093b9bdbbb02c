#!/usr/bin/env python
"""The command line of the relevance floor's calibration, bench/recall_floor.py (its docstring is this command's
help)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import recall_floor  # noqa: E402
from scripts._django import setup  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=recall_floor.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--labelled", type=Path)
    source.add_argument("--dataset", type=Path)
    source.add_argument("--locomo", type=Path)
    source.add_argument("--traces", action="store_true")
    parser.add_argument(
        "--split", help="dataset split to use (dev by default: tune on dev, report held-out)", default="dev"
    )
    parser.add_argument("--project", help="with --traces: one project only")
    parser.add_argument(
        "--noise", type=int, default=0, help="with --dataset: background facts per scope (eval_recall's 120)"
    )
    parser.add_argument("--embedder", help="override HAKI_EMBED_PROVIDER for this run")
    parser.add_argument("--target-recall", type=float, default=0.95)
    parser.add_argument(
        "--packing", action="store_true", help="with --dataset or --locomo: what each floor does to packets"
    )
    parser.add_argument("--budget", type=int, default=900, help="with --packing: tokens a packet holds")
    parser.add_argument("--small-size", type=int, default=10, help="with --packing: items in a small scope")
    parser.add_argument("--seed", type=int, default=0, help="with --packing: the draw of the small scopes")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    setup()
    return recall_floor.calibrate(
        labelled=args.labelled,
        dataset=args.dataset,
        traces=args.traces,
        split=args.split,
        project=args.project,
        embedder=args.embedder,
        target_recall=args.target_recall,
        json_path=args.json,
        locomo=args.locomo,
        noise=args.noise,
        packing=args.packing,
        budget=args.budget,
        small_size=args.small_size,
        seed=args.seed,
    )


if __name__ == "__main__":
    raise SystemExit(main())
