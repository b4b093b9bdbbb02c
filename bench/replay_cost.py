"""What a replay costs against a plain context call, in one process against its own embedded server
(var/pgdata-bench-replay, or HAKI_PGDATA), with the hashing embedder (the query's vector is cached either way).

    .venv/bin/python scripts/bench_replay.py [--calls 40] [--sizes 200,2000,10000]

For each scope size, it makes --calls plain calls (distinct questions), then replays each against the memory now
and as it was, and prints per call the wall time (mean, p50, p95) and the SQL statements. A replay is a full
context call plus the reads of both traces' decisions; as it was, the scope is sorted exactly from the heap
(context/retrieval_asof.py), so its cost grows with the scope where a plain call's stays near flat.
It erases its project at the end.
It needs Django set up before it is imported: its command line, scripts/bench_replay.py, does that first.
"""

from __future__ import annotations

import json
import logging
import random
import statistics
import tempfile
import time
from pathlib import Path

from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from context.assembler import context_assemble
from context.replay import context_replay
from facts.models import Event, Fact
from privacy.services import project_erase
from facts.text import text_hash
from hakimem.embeddings import get_embedder
from traces.models import Trace

PROJECT = "bench-replay"
WORDS = (
    "garden tomatoes bicycle sister Lisbon piano novel marathon cat allergy peanuts wedding Oslo kayak violin "
    "museum recipe holiday doctor hiking chess coffee train mountain painting brother Porto yoga camera"
).split()


def _scope(subject: str, size: int) -> None:
    rng = random.Random(size)
    now = timezone.now()
    texts = [
        f"Alice mentioned {rng.choice(WORDS)} and {rng.choice(WORDS)} on day {i} with {rng.choice(WORDS)}."
        for i in range(size)
    ]
    vectors = get_embedder().embed(texts)
    Fact.objects.bulk_create(
        [
            Fact(
                project_id=PROJECT,
                subject_id=subject,
                text=t,
                text_hash=text_hash(t),
                embedding=v,
                recorded_from=now - timezone.timedelta(minutes=size - i),
                last_confirmed_at=now,
            )
            for i, (t, v) in enumerate(zip(texts, vectors, strict=True))
        ],
        batch_size=1000,
    )
    events = [f"Alice went to the {rng.choice(WORDS)} event number {i}." for i in range(max(10, size // 20))]
    Event.objects.bulk_create(
        [
            Event(project_id=PROJECT, subject_id=subject, text=t, occurred_at=now, embedding=v)
            for t, v in zip(events, get_embedder().embed(events), strict=True)
        ],
        batch_size=1000,
    )


def _timed(fn) -> tuple[float, int]:
    with CaptureQueriesContext(connection) as queries:
        started = time.perf_counter()
        fn()
        return (time.perf_counter() - started) * 1000, len(queries.captured_queries)


def _line(name: str, runs: list[tuple[float, int]]) -> str:
    ms = sorted(r[0] for r in runs)
    p95 = ms[min(len(ms) - 1, int(0.95 * len(ms)))]
    return (
        f"  {name:<20} mean {statistics.mean(ms):7.2f} ms   p50 {statistics.median(ms):7.2f} ms   "
        f"p95 {p95:7.2f} ms   {statistics.mean(r[1] for r in runs):4.1f} statements"
    )


def run(*, calls: int, sizes: str) -> None:
    logging.getLogger("hakimem.context").setLevel(logging.WARNING)
    call_command("migrate", verbosity=0)
    project_erase(project_id=PROJECT)
    try:
        for size in (int(s) for s in sizes.split(",")):
            subject = f"s{size}"
            _scope(subject, size)
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE facts_fact, facts_event")
            rng = random.Random(1)
            queries = [f"What about {rng.choice(WORDS)} and {rng.choice(WORDS)} (question {i})?" for i in range(calls)]
            for q in queries[:3]:  # warm the connection, the statistics and the embedder's cache
                context_assemble(project_id=PROJECT, subject_id=subject, query=q, budget_tokens=900)
            plain, ids = [], []
            for q in queries:
                packet = {}
                plain.append(
                    _timed(
                        lambda q=q: packet.update(
                            context_assemble(project_id=PROJECT, subject_id=subject, query=q, budget_tokens=900)
                        )
                    )
                )
                ids.append(packet["trace_id"])
            traces = list(Trace.objects.filter(id__in=ids))
            now = [_timed(lambda t=t: context_replay(trace=t, as_of="now")) for t in traces]
            original = [_timed(lambda t=t: context_replay(trace=t, as_of="original")) for t in traces]
            print(f"scope of {size} facts, {calls} calls")
            print(_line("plain call", plain))
            print(_line("replay now", now))
            print(_line("replay as it was", original))
            if size == min(int(x) for x in sizes.split(",")):  # what the batch command prints, on these calls
                path = Path(tempfile.mkdtemp()) / "overrides.json"
                path.write_text(json.dumps({"w_recency": 0.15, "budget_tokens": 600}))
                print(f"manage.py replay --project {PROJECT} --subject {subject} --overrides {path.name}:")
                call_command(
                    "replay",
                    "--project",
                    PROJECT,
                    "--subject",
                    subject,
                    "--overrides",
                    str(path),
                    "--limit",
                    str(calls),
                )
    finally:
        project_erase(project_id=PROJECT)
