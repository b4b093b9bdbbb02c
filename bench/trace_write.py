"""The trace write alone: traces.services.trace_record with 150 decisions (140 facts, 10 episodes), as a context
call makes it, in one process against its own embedded server (var/pgdata-bench-tw, or HAKI_PGDATA).

    .venv/bin/python scripts/bench_trace_write.py [--writes 500] [--decisions 150] [--served 15] [--compare-access]

Prints the wall time per write (p50, p95) and the CPU it costs, split between this process (building the
statement) and the database backend (read from /proc, so the server must run on this machine). On a machine
shared with other work the wall time mostly measures the wait for a core; the CPU figures hold up better and
are what to compare between two versions of the writer.
It needs Django set up before it is imported: its command line, scripts/bench_trace_write.py, does that first.
"""

from __future__ import annotations

import logging
import os
import random
import time
from pathlib import Path

import numpy as np
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from facts.models import Event, Fact
from privacy.services import project_erase
from facts.text import text_hash
from hakimem.db import with_tables
from traces import services
from traces.models import ItemAccess
from traces.services import DecisionRow, trace_record

PROJECT, SUBJECT = "bench-trace-write", "alice"


def _reasons(served: int) -> list[str]:
    """The reason codes of a call's best-ranked decisions (the rest are over budget): `served` served, a fifth
    of them by multi-hop, then a few blocked and below the floor. Served items cost the writer more than the
    others since it counts how often each is served (traces.models.ItemAccess)."""
    hops = served // 5
    return (
        ["included"] * (served - hops)
        + ["multi_hop_expansion"] * hops
        + ["conflict_open"] * 3
        + ["below_relevance_floor"] * 2
    )


def _scope(facts: int, events: int) -> tuple[list, list]:
    rng = np.random.default_rng(7)
    now = timezone.now()

    def vector():
        v = rng.standard_normal(384).astype(np.float32)
        return v / np.linalg.norm(v)

    texts = [f"Alice noted thing {i} in her diary." for i in range(facts)]
    Fact.objects.bulk_create(
        [
            Fact(
                project_id=PROJECT,
                subject_id=SUBJECT,
                text=t,
                text_hash=text_hash(t),
                embedding=vector(),
                recorded_from=now,
                last_confirmed_at=now,
            )
            for t in texts
        ]
    )
    Event.objects.bulk_create(
        [
            Event(
                project_id=PROJECT,
                subject_id=SUBJECT,
                text=f"Alice went out ({i}).",
                occurred_at=now,
                embedding=vector(),
            )
            for i in range(events)
        ]
    )
    return (
        list(Fact.objects.filter(project_id=PROJECT).values_list("id", flat=True)),
        list(Event.objects.filter(project_id=PROJECT).values_list("id", flat=True)),
    )


def _call(fact_ids, event_ids, decisions: int, reasons: list[str]) -> tuple[dict, list[DecisionRow]]:
    episodes = max(1, decisions // 15)
    items = [("fact", i) for i in random.sample(fact_ids, decisions - episodes)] + [
        ("episode", i) for i in random.sample(event_ids, episodes)
    ]
    random.shuffle(items)
    rows = [
        DecisionRow(
            item_type=kind,
            item_id=item_id,
            reason_code=reasons[rank - 1] if rank <= len(reasons) else "over_budget",
            rank=rank,
            score=random.random(),
            similarity=random.random(),
            cosine_distance=random.random(),
            text_rank=random.random(),
            recency=random.random(),
            tokens=random.randint(5, 40),
            entity="Lisbon" if reasons[rank - 1 : rank] == ["multi_hop_expansion"] else "",
        )
        for rank, (kind, item_id) in enumerate(items, start=1)
    ]
    trace = {
        "project_id": PROJECT,
        "subject_id": SUBJECT,
        "query": "What does Alice like to do on Sundays?",
        "budget_tokens": 900,
        "used_tokens": 620,
        "status": "ok",
        "empty_reason": None,
        "warnings": [],
        "rendered": "<haki_memory>" + "x" * 2400 + "</haki_memory>",
        "facts_served": 14,
        "episodes_served": 1,
        "candidates": decisions,
        "embedder": "hashing",
        "timings": {"embed": 1.0, "retrieve": 6.0, "episodes": 2.0, "pack": 0.1, "multi_hop": 1.5, "render": 0.4},
        "latency_ms": 11.0,
        "created_at": timezone.now(),
    }
    return trace, rows


def run(*, compare_access: bool, decisions: int, served: int, writes: int) -> None:
    logging.getLogger("hakimem.context").setLevel(logging.WARNING)  # one log line per write is not the point here
    call_command("migrate", verbosity=0)
    random.seed(11)
    project_erase(project_id=PROJECT)
    fact_ids, event_ids = _scope(max(300, decisions * 2), 40)
    calls = [_call(fact_ids, event_ids, decisions, _reasons(served)) for _ in range(writes)]
    for trace, rows in calls[:20]:  # warm the connection and the caches
        trace_record(trace=dict(trace), decisions=rows)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        stat = Path(f"/proc/{cursor.fetchone()[0]}/stat")

    def backend_cpu() -> float:
        fields = stat.read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    # --compare-access: blocks of writes alternate between the writer as it is and the writer without its access
    # count upsert (the statement before issue 15), so that both see the same load on a shared machine.
    variants = {"with access counts": services.TRACE_INSERT_SQL}
    if compare_access:
        variants["without access counts"] = services.TRACE_INSERT_SQL.replace(
            with_tables(services._ACCESS_UPSERT_SQL, item_access=ItemAccess), ""
        )
    figures = {name: {"walls": [], "client": 0.0, "server": 0.0, "writes": 0} for name in variants}
    block = 100 if compare_access else len(calls)
    for n, start in enumerate(range(0, len(calls), block)):
        name = list(variants)[n % len(variants)]
        services.TRACE_INSERT_SQL = variants[name]
        f = figures[name]
        client0, server0 = time.process_time(), backend_cpu()
        for trace, rows in calls[start : start + block]:
            started = time.perf_counter()
            trace_record(trace=dict(trace), decisions=rows)
            f["walls"].append((time.perf_counter() - started) * 1000)
        f["client"] += time.process_time() - client0
        f["server"] += backend_cpu() - server0
        f["writes"] += len(calls[start : start + block])
    services.TRACE_INSERT_SQL = variants["with access counts"]
    for name, f in figures.items():
        walls, done = sorted(f["walls"]), f["writes"]
        client, server = f["client"] * 1000 / done, f["server"] * 1000 / done
        print(
            f"trace write {name}, {decisions} decisions ({served} served), {done} writes: "
            f"wall p50 {walls[len(walls) // 2]:.2f} ms, p95 {walls[int(len(walls) * 0.95)]:.2f} ms; "
            f"CPU per write {client + server:.2f} ms (this process {client:.2f}, database backend {server:.2f})"
        )
    project_erase(project_id=PROJECT)
