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
    parser = argparse.ArgumentParser(description=recall_floor.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--labelled", type=Path)
    source.add_argument("--dataset", type=Path)
    source.add_argument("--traces", action="store_true")
    parser.add_argument("--split", help="dataset split to use (dev by default: tune on dev, report held-out)", default="dev")
    parser.add_argument("--project", help="with --traces: one project only")
    parser.add_argument("--embedder", help="override HAKI_EMBED_PROVIDER for this run")
    parser.add_argument("--target-recall", type=float, default=0.95)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    setup()
    return recall_floor.calibrate(labelled=args.labelled, dataset=args.dataset, traces=args.traces, split=args.split,
                                  project=args.project, embedder=args.embedder, target_recall=args.target_recall,
                                  json_path=args.json)


if __name__ == "__main__":
    raise SystemExit(main())
