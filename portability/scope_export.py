"""Export: a project's memory, or one subject's, as the records of portability.records, read lazily in one
consistent snapshot (`manage.py export_scope`)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from itertools import groupby
from operator import itemgetter

from django.db import connection, transaction
from django.db.models.functions import Collate
from django.utils import timezone

from facts.models import ConflictMember, ConflictSet, Event, Fact, IdentityBlock, Procedure
from hakimem.embeddings import Embedder
from portability.records import (
    CHUNK,
    COLUMN,
    CONFLICT_FIELDS,
    EVENT_FIELDS,
    EXPORTER,
    FACT_FIELDS,
    FORMAT,
    IDENTITY_BLOCK_FIELDS,
    PROCEDURE_FIELDS,
    VERSION,
    chunked,
    dumps,
)


def _json_value(value):
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def _record(kind: str, names: Iterable[str], row: dict) -> dict:
    record = {"type": kind}
    for name in names:
        record[name] = _json_value(row[COLUMN.get(name, name)])
    if "embedding" in row:
        record["embedding"] = row["embedding"].to_list()
    return record


def _by_subject(queryset, columns: list[str]):
    # COLLATE "C": subjects in code-point order, as Python compares them when the three streams are merged.
    rows = queryset.order_by(Collate("subject_id", "C"), "id").values(*columns).iterator(chunk_size=CHUNK)
    return groupby(rows, key=itemgetter("subject_id"))


def _conflict_records(rows) -> Iterator[dict]:
    for chunk in chunked(rows, CHUNK):
        members: dict[uuid.UUID, list[dict]] = {row["id"]: [] for row in chunk}
        for member in (
            ConflictMember.objects.filter(conflict_set_id__in=list(members))
            .order_by("added_at", "fact_id")
            .values("conflict_set_id", "fact_id", "added_at", "kept")
        ):
            members[member["conflict_set_id"]].append(
                {"fact": str(member["fact_id"]), "added_at": member["added_at"].isoformat(), "kept": member["kept"]}
            )
        for row in chunk:
            yield {**_record("conflict_set", CONFLICT_FIELDS, row), "members": members[row["id"]]}


@dataclass
class Export:
    header: dict
    records: Iterator[dict]  # lazy: valid while the transaction export_scope opened is


def scope_export(*, project_id: str, subject_id: str | None, with_embeddings: bool, embedder: Embedder) -> Export:
    """The header and the records of a project, or of one of its subjects, read lazily through server-side
    cursors. Call inside a transaction (export_records opens a consistent one)."""
    scope = {"project_id": project_id}
    if subject_id is not None:
        scope["subject_id"] = subject_id
    # A project's filter takes its project-wide identity blocks and procedures too (subject_id ""); a subject's,
    # only the subject's own.
    events, facts, conflicts, blocks, procedures = (
        model.objects.filter(**scope) for model in (Event, Fact, ConflictSet, IdentityBlock, Procedure)
    )
    header = {
        "type": "header",
        "format": FORMAT,
        "version": VERSION,
        "exporter": EXPORTER,
        "exported_at": timezone.now().isoformat(),
        "scope": {"project_id": project_id, "subject_id": subject_id},
        "with_embeddings": with_embeddings,
        "embedding": embedder.identity(),
        "counts": {
            "events": events.count(),
            "facts": facts.count(),
            "conflict_sets": conflicts.count(),
            "identity_blocks": blocks.count(),
            "procedures": procedures.count(),
        },
    }
    vector = ["embedding"] if with_embeddings else []
    streams = [
        (
            lambda rows: (_record("event", EVENT_FIELDS, r) for r in rows),
            _by_subject(events, [COLUMN.get(n, n) for n in EVENT_FIELDS] + vector),
        ),
        (
            lambda rows: (_record("fact", FACT_FIELDS, r) for r in rows),
            _by_subject(facts, [COLUMN.get(n, n) for n in FACT_FIELDS] + vector),
        ),
        (_conflict_records, _by_subject(conflicts, list(CONFLICT_FIELDS))),
        (
            lambda rows: (_record("identity_block", IDENTITY_BLOCK_FIELDS, r) for r in rows),
            _by_subject(blocks, list(IDENTITY_BLOCK_FIELDS)),
        ),
        (
            lambda rows: (_record("procedure", PROCEDURE_FIELDS, r) for r in rows),
            _by_subject(procedures, list(PROCEDURE_FIELDS) + vector),
        ),
    ]
    return Export(header=header, records=_merge_by_subject(streams))


def _merge_by_subject(streams) -> Iterator[dict]:
    """One subject at a time: its events, facts, conflict sets, identity blocks, then procedures (each stream is
    sorted by subject)."""
    heads = [next(groups, None) for _, groups in streams]
    while any(head is not None for head in heads):
        subject = min(head[0] for head in heads if head is not None)
        for k, (to_records, groups) in enumerate(streams):
            if heads[k] is not None and heads[k][0] == subject:
                yield from to_records(heads[k][1])
                heads[k] = next(groups, None)


@contextmanager
def snapshot():
    """A read-only transaction that sees the store as of its start, so the header's counts, the facts and the
    conflict sets that name them agree even while the API writes. (Inside an outer transaction, as in the
    tests, that transaction's isolation applies.)"""
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if outermost:
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        yield


def export_lines(export: Export) -> Iterator[str]:
    yield dumps(export.header)
    for record in export.records:
        yield dumps(record)
