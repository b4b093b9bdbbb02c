"""The benchmark dataset (bench/dataset.py) into the database: its texts embedded once and cached by chunk, then
copied into project "bench" in one transaction, the hnsw indexes rebuilt around a large COPY.

    python scripts/bench_data.py --total 200000 --embedder hashing
"""

from __future__ import annotations

import hashlib
import random
import sys
import time
import uuid
import zlib
from datetime import datetime
from pathlib import Path

import numpy as np
from django.db import connection, transaction

from bench.dataset import PROJECT, generate_events, generate_facts, subject_sizes, today
from facts.text import text_hash
from hakimem.embeddings import _build

EMBED_DIM = 384  # facts.models.EMBED_DIM, which cannot be imported before django.setup() (main runs it)
REBUILD_ABOVE_ROWS = 20_000  # above this, drop the hnsw indexes around the COPY and build them after
HNSW_INDEXES = ("facts_fact_embedding_hnsw", "facts_event_embedding_hnsw")

# Embedding cache chunks are content-defined (a chunk ends after a text whose crc32 is 0 modulo
# CHUNK_SPREAD, once it holds CHUNK_MIN texts), not fixed 10k slices: the boundaries then depend on the
# texts alone, so a run whose text list shares long runs with an earlier one (200k then 1M: same "big",
# same first mids, same first small subjects) finds the same chunks even where the offsets differ.
CHUNK_MIN, CHUNK_SPREAD, CHUNK_MAX = 5_000, 5_000, 20_000


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _chunk_bounds(texts: list[str]) -> list[tuple[int, int]]:
    bounds, start = [], 0
    for i, text in enumerate(texts):
        size = i + 1 - start
        if size >= CHUNK_MAX or (size >= CHUNK_MIN and zlib.crc32(text.encode("utf-8")) % CHUNK_SPREAD == 0):
            bounds.append((start, i + 1))
            start = i + 1
    if start < len(texts):
        bounds.append((start, len(texts)))
    return bounds


def embed_cached(texts: list[str], provider: str, cache_dir: Path) -> np.ndarray:
    """Unit vectors (float32, (len(texts), 384)) for `texts`, encoded chunk by chunk; each chunk is kept in
    `cache_dir` as <provider>-<sha256 of the chunk's texts>.npy and never encoded again."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    embedder = _build(provider, EMBED_DIM, "", "", "", 10.0)
    out = np.empty((len(texts), EMBED_DIM), dtype=np.float32)
    bounds = _chunk_bounds(texts)
    for number, (start, end) in enumerate(bounds, 1):
        digest = hashlib.sha256()
        for text in texts[start:end]:
            digest.update(text.encode("utf-8") + b"\0")
        path = cache_dir / f"{provider}-{digest.hexdigest()}.npy"
        began = time.perf_counter()
        if path.exists():
            out[start:end] = np.load(path)
            how = "cached"
        else:
            out[start:end] = embedder.embed(texts[start:end])
            staging = path.with_suffix(".partial")  # an interrupted run must not leave a truncated cache file
            with staging.open("wb") as fh:
                np.save(fh, out[start:end])
            staging.replace(path)
            how = "encoded"
        _log(
            f"embed {provider}: chunk {number}/{len(bounds)} ({end - start} texts) {how} in "
            f"{time.perf_counter() - began:.1f}s"
        )
    return out


# pgvector's text form ("%.7g" per value; the halfvec column rounds), with one % per row instead of one per value:
# formatting is the COPY's main cost on the Python side.
_VECTOR_ROW = "[" + ",".join(["%.7g"] * EMBED_DIM) + "]"

FACT_COPY = (
    "COPY facts_fact (id, project_id, subject_id, text, text_hash, embedding, status, category, kind, "
    "importance, volatility, valid_from, recorded_from, last_confirmed_at, metadata) FROM STDIN"
)
EVENT_COPY = (
    "COPY facts_event (id, project_id, subject_id, text, occurred_at, embedding, metadata, recorded_at) FROM STDIN"
)


def _index_definitions(cursor) -> dict[str, str]:
    """The hnsw indexes' CREATE INDEX statements, as the migrations made them, by index name."""
    cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE indexname = ANY(%s)", [list(HNSW_INDEXES)])
    return dict(cursor.fetchall())


def _copy_rows(cursor, facts, fact_vectors, events, event_vectors, seed: int) -> None:
    ids = random.Random(f"{seed}/ids")

    def new_id() -> uuid.UUID:
        return uuid.UUID(int=ids.getrandbits(128), version=4)

    fact_ids = [new_id() for _ in facts]
    event_ids = [new_id() for _ in events]
    # Rows go in in the order a live service would have written them (by time, subjects interleaved), so
    # a subject's rows are spread over the table as in production, not packed into adjacent pages.
    with cursor.copy(FACT_COPY) as copy:
        for i in sorted(range(len(facts)), key=lambda i: facts[i]["recorded_from"]):
            f = facts[i]
            copy.write_row(
                (
                    fact_ids[i],
                    f["project_id"],
                    f["subject_id"],
                    f["text"],
                    text_hash(f["text"]),
                    _VECTOR_ROW % tuple(fact_vectors[i].tolist()),
                    "active",
                    f["category"],
                    f["kind"],
                    f["importance"],
                    f["volatility"],
                    f["valid_from"],
                    f["recorded_from"],
                    f["last_confirmed_at"],
                    "{}",
                )
            )
    with cursor.copy(EVENT_COPY) as copy:
        for i in sorted(range(len(events)), key=lambda i: events[i]["recorded_at"]):
            e = events[i]
            copy.write_row(
                (
                    event_ids[i],
                    e["project_id"],
                    e["subject_id"],
                    e["text"],
                    e["occurred_at"],
                    _VECTOR_ROW % tuple(event_vectors[i].tolist()),
                    "{}",
                    e["recorded_at"],
                )
            )


def load(
    total: int,
    provider: str,
    cache_dir: Path,
    seed: int = 7,
    *,
    rebuild_indexes: bool | None = None,
    now: datetime | None = None,
) -> dict:
    """Replace project "bench" with the dataset for `total` facts; returns counts, timings (seconds) and the
    hnsw index sizes (MB).

    With more than REBUILD_ABOVE_ROWS rows (or rebuild_indexes=True), the two hnsw indexes are dropped
    before the COPY and built again after it, in the same transaction: 200k facts + 20k events load in
    ~12 s + ~40 s of builds, against ~270 s of COPY into the live indexes. The tables stay locked (reads and
    writes of every project wait) until that transaction commits, and the build covers every project's
    rows: do not load while something else uses the database."""
    from privacy.services import project_erase  # needs the apps loaded: django.setup(), which main runs

    began = time.perf_counter()
    anchor = today(now)
    facts = list(generate_facts(total, seed, anchor))
    events = list(generate_events(total, seed, anchor))
    result = {
        "total": total,
        "provider": provider,
        "seed": seed,
        "facts": len(facts),
        "events": len(events),
        "subjects": len(subject_sizes(total, seed)),
        "generate_s": round(time.perf_counter() - began, 2),
    }
    _log(f"generated {len(facts)} facts and {len(events)} events in {result['generate_s']}s")

    mark = time.perf_counter()
    fact_vectors = embed_cached([f["text"] for f in facts], provider, cache_dir)
    event_vectors = embed_cached([e["text"] for e in events], provider, cache_dir)
    result["embed_s"] = round(time.perf_counter() - mark, 2)

    rebuild = len(facts) + len(events) > REBUILD_ABOVE_ROWS if rebuild_indexes is None else rebuild_indexes
    result["index_strategy"] = "rebuild" if rebuild else "keep"
    with connection.cursor() as cursor:
        mark = time.perf_counter()
        with transaction.atomic():
            # The previous run's rows, with the traces of its context calls on these facts.
            project_erase(project_id=PROJECT)
        # Frees the deleted rows' space for the COPY, and their entries in the hnsw graphs, which a COPY into
        # a kept index would otherwise grow around. A few seconds even for 200k deleted rows.
        cursor.execute("VACUUM facts_fact, facts_event")
        result["delete_s"] = round(time.perf_counter() - mark, 2)
        _log(f"deleted the previous rows in {result['delete_s']}s; copying ({result['index_strategy']} hnsw)")

        # One transaction from DROP to CREATE: other sessions wait on the lock rather than ever finding the
        # tables without their hnsw indexes, and an interrupted load rolls the indexes back with the rows.
        with transaction.atomic():
            definitions = _index_definitions(cursor) if rebuild else {}
            for name in definitions:
                cursor.execute(f"DROP INDEX {name}")
            mark = time.perf_counter()
            _copy_rows(cursor, facts, fact_vectors, events, event_vectors, seed)
            result["copy_s"] = round(time.perf_counter() - mark, 2)
            _log(f"copied in {result['copy_s']}s")
            if rebuild:
                # The copied rows queued the deferred foreign-key checks (superseded_by, source_event), and
                # CREATE INDEX refuses a table with pending trigger events: run them now rather than at
                # commit (the same work, earlier).
                cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
                cursor.execute("SET LOCAL maintenance_work_mem = '1GB'")
                for name, definition in definitions.items():
                    mark = time.perf_counter()
                    cursor.execute(definition)
                    result[f"{name}_build_s"] = round(time.perf_counter() - mark, 2)
                    _log(f"built {name} in {result[f'{name}_build_s']}s")
        mark = time.perf_counter()
        # What autovacuum would do after a bulk insert: statistics for the planner, and the visibility map
        # that lets the exact dense leg read facts_fact_scope_vectors without visiting the heap.
        cursor.execute("VACUUM (ANALYZE) facts_fact, facts_event")
        result["analyze_s"] = round(time.perf_counter() - mark, 2)
        # And what the nightly consolidation does: the words of every large scope counted (context calls read them).
        from django.conf import settings

        from facts.scope_words import scope_words_refresh

        mark = time.perf_counter()
        result["scope_words_counted"] = scope_words_refresh(min_items=settings.HAKI_SCOPE_WORDS_MIN_ITEMS)
        result["scope_words_s"] = round(time.perf_counter() - mark, 2)
        for name in HNSW_INDEXES:
            cursor.execute("SELECT pg_relation_size(%s::regclass)", [name])
            result[f"{name}_mb"] = round(cursor.fetchone()[0] / 2**20, 1)
    result["total_s"] = round(time.perf_counter() - began, 2)
    return result


def loaded(total: int, seed: int) -> bool:
    """Whether project "bench" holds the dataset of `total` facts drawn with `seed`, subject by subject."""
    expected = dict(subject_sizes(total, seed))
    with connection.cursor() as cursor:
        cursor.execute("SELECT subject_id, count(*) FROM facts_fact WHERE project_id = %s GROUP BY 1", [PROJECT])
        found = dict(cursor.fetchall())
    return found == expected


def embedded_with(embedder: str) -> bool:
    """Whether the loaded facts were embedded by `embedder` (a load by another one holds the same rows)."""
    from hakimem.embeddings import get_embedder
    from portability.store_vectors import OK, store_vectors

    return store_vectors(get_embedder(embedder)) == OK


def ensure_loaded(total: int, embedder: str, cache_dir: Path, seed: int, *, reload: bool = False) -> dict | None:
    """The dataset loaded unless it is there, embedded by `embedder`: the load's report, or None when it was."""
    if reload or not loaded(total, seed) or not embedded_with(embedder):
        return load(total, embedder, cache_dir, seed)
    return None
