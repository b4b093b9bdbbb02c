"""What row-level security and the per-key rate counter cost a context call, measured interleaved.

    .venv/bin/python scripts/bench_row_security.py --total 50000 --embedder hashing   # after bench.py loaded it

On the dataset scripts/bench.py loads (var/pgdata-bench, or HAKI_PGDATA / DATABASE_URL; run bench.py first with
the same --total), each question is asked through Django's stack (POST /v1/context, as bench.py's end-to-end
figure) three times in a rotating order: row security off and no rate counter, row security on, row security
on with the rate counter. Interleaving cancels the drift of a shared machine's load, which moves separate runs
of bench.py by more than these costs. The embedding cache is off, so no mode finds the others' vector. Prints
p50/p95 per mode and the p50 of the per-question differences.
Its command line, scripts/bench_row_security.py, sets Django up before calling run.
"""

from __future__ import annotations

import json
import time

import numpy as np

MODES = ("off", "row_security", "row_security+counter")


def run(*, total: int, embedder: str, queries: int, seed: int) -> int:
    from django.conf import settings
    from django.test import Client

    from bench import dataset
    from bench.in_process import _subjects
    from hakimem.rates import Rate
    from hakimem.services import api_key_create

    settings.HAKI_EMBED_PROVIDER = embedder
    settings.HAKI_EMBED_CACHE_SIZE = 0
    chosen, sizes = _subjects(total, seed)
    _, raw = api_key_create(project_id=dataset.PROJECT, label="bench_row_security")
    client, auth = Client(), f"Bearer {raw}"

    def call(subject: str, query: str, mode: str) -> float:
        settings.HAKI_ROW_SECURITY = mode != "off"
        settings.HAKI_THROTTLE_RATE = Rate(10**9, 1) if mode.endswith("counter") else None
        body = json.dumps({"project_id": dataset.PROJECT, "subject_id": subject, "query": query})
        started = time.perf_counter()
        response = client.post("/v1/context", data=body, content_type="application/json", HTTP_AUTHORIZATION=auth)
        elapsed = (time.perf_counter() - started) * 1000
        assert response.status_code == 200, response.content
        return elapsed

    print(f"{'scope':>7} {'facts':>7} | " + " | ".join(f"{m:>22}" for m in MODES) + " | rls - off | counter")
    for label, subject in chosen.items():
        for mode in MODES:  # warm-up
            call(subject, "warm up", mode)
        times = {m: [] for m in MODES}
        for i, query in enumerate(dataset.generate_queries(queries, seed, subject_id=subject)):
            order = MODES[i % 3 :] + MODES[: i % 3]
            for mode in order:
                times[mode].append(call(subject, query, mode))
        t = {m: np.array(v) for m, v in times.items()}
        cols = " | ".join(f"p50 {np.percentile(t[m], 50):6.2f} p95 {np.percentile(t[m], 95):6.2f}" for m in MODES)
        rls = np.median(t["row_security"] - t["off"])
        counter = np.median(t["row_security+counter"] - t["row_security"])
        print(f"{label:>7} {sizes[subject]:>7} | {cols} | {rls:+8.2f} | {counter:+6.2f}   (ms)")
    return 0
