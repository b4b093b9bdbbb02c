"""How long does one batch of similar long facts hold its subject's write lock? Times fact_create_batch.

    .venv/bin/python scripts/bench_batch.py                      # 50, 100 and 200 facts of ~7k characters
    .venv/bin/python scripts/bench_batch.py --sizes 400 --chars 7000

Each item is the same ~7k-character text with its own number in one slot (what an attacker sends to make every
pair similar, and every pair a `different_number` contradiction), written with the hashing embedder into the
development database (or HAKI_PGDATA / DATABASE_URL) under project "batch-bench", erased before and after.
Prints the time of fact_create_batch (embedding, classification, writes), the part under the subject's lock, and
the classification alone.
It needs Django set up before it is imported: its command line, scripts/bench_batch.py, does that first.
"""

from __future__ import annotations

import random
import time

from django.conf import settings

from facts import writes
from privacy.services import project_erase
from facts.writes import FactInput, fact_create_batch

PROJECT = "batch-bench"


def texts(n: int, chars: int) -> list[str]:
    rng = random.Random(7)
    words = (
        "Alice went to the market in Paris and bought apples because she likes tea and coffee with her "
        "friends on Monday mornings before work"
    ).split()
    base = []
    while sum(len(w) + 1 for w in base) < chars:
        base.append(rng.choice(words))
    head, tail = " ".join(base[: len(base) // 2]), " ".join(base[len(base) // 2 :])
    return [f"{head} {100 + i} {tail}" for i in range(n)]


def run(*, chars: int, sizes: str) -> None:
    settings.HAKI_EMBED_PROVIDER = "hashing"
    spent = {"classify": 0.0, "locked": 0.0}

    def timing(name, function):
        def timed(*a, **k):
            started = time.perf_counter()
            try:
                return function(*a, **k)
            finally:
                spent[name] += time.perf_counter() - started

        return timed

    # _store_facts runs under the scopes' advisory lock (fact_create_batch embeds before taking it).
    writes._classify = timing("classify", writes._classify)
    writes._store_facts = timing("locked", writes._store_facts)
    for size in (int(s) for s in sizes.split(",")):
        project_erase(project_id=PROJECT)
        items = [FactInput(project_id=PROJECT, subject_id=f"s{size}", text=t) for t in texts(size, chars)]
        spent.update(classify=0.0, locked=0.0)
        started = time.perf_counter()
        results = fact_create_batch(items=items, actor="bench")
        total = time.perf_counter() - started
        conflicts = sum(1 for r in results if r.conflict_set)
        print(
            f"{size:4d} facts of {len(items[0].text)} chars: {total:7.2f} s, lock held {spent['locked']:7.2f} s"
            f" (classification {spent['classify']:7.2f} s)"
            f"  {conflicts} with a conflict set",
            flush=True,
        )
    project_erase(project_id=PROJECT)
