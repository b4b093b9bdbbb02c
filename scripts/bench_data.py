"""The command line of the benchmark dataset's loader, bench/loader.py (its docstring's first paragraph is this
command's help)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import loader  # noqa: E402
from hakimem.embeddings import PROVIDERS  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=loader.__doc__.split("\n\n")[0])
    parser.add_argument("--total", type=int, default=200_000, help="number of facts (default 200000)")
    parser.add_argument("--embedder", choices=PROVIDERS, default="hashing")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--cache-dir", type=Path, default=ROOT / "var" / "bench-cache")
    parser.add_argument(
        "--hnsw",
        choices=("auto", "keep", "rebuild"),
        default="auto",
        help=f"drop and rebuild the hnsw indexes around the COPY (auto: above {loader.REBUILD_ABOVE_ROWS} rows)",
    )
    args = parser.parse_args(argv)

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ["HAKI_EMBED_PROVIDER"] = args.embedder
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)  # a new data folder has no tables yet (scripts/bench.py does the same)
    rebuild = {"auto": None, "keep": False, "rebuild": True}[args.hnsw]
    print(
        json.dumps(loader.load(args.total, args.embedder, args.cache_dir, args.seed, rebuild_indexes=rebuild), indent=2)
    )


if __name__ == "__main__":
    main()
