"""The command line of the embedder cost benchmark, bench/embedder_cost.py (its docstring is this command's help)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scripts import _django  # noqa: E402

_django.setup()

from bench import embedder_cost  # noqa: E402
from hakimem.embeddings import PROVIDERS  # noqa: E402

IN_PROCESS = [p for p in PROVIDERS if p not in ("hashing", "openai")]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=embedder_cost.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--providers", default=",".join(IN_PROCESS))
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--out", type=Path, default=ROOT / "bench-output" / "embedders.json")
    args = parser.parse_args(argv)
    providers = [p for p in args.providers.split(",") if p]
    unknown = [p for p in providers if p not in PROVIDERS]
    if unknown:
        parser.error(f"unknown providers: {unknown}")
    report = embedder_cost.run(providers=providers, questions=args.questions, batches=args.batches)
    print(embedder_cost.format_report(report))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
