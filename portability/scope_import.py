"""Import (`manage.py import_jsonl`) restores a state verbatim: no de-duplication, no conflict detection (the
conflict sets come with the file). It reads the file twice and never holds more than a chunk of it:
1. it checks every line (JSON, type, fields, the scope grouping, the header's counts, so a truncated file is
   refused) and, in the database, that no id exists already, no active fact's text is taken in its scope, and
   no identity block's name either, nor a scope left with more than IDENTITY_BLOCKS_PER_SCOPE blocks; any
   error is reported with its line and field before anything is written;
2. it writes scope by scope, each scope in its own transaction under the scope lock the write path takes, and
   checks before each commit that the scope's references (successor, source event, conflict members) stay
   inside it.
So the file imports whole or, when the first pass refuses it, not at all. A failure only the second pass can
see (a writer adding a colliding row in between, a reference that leads nowhere) rolls back the scope being
written; the scopes before it stay, and a rerun with skip_existing continues. One transaction per scope rather
than per file: a file-wide transaction would hold one advisory lock per subject until its end, and a project
of thousands of subjects would exhaust the server's lock table.
"""

from __future__ import annotations

import json
import re
import uuid
from collections import Counter
from dataclasses import dataclass, field
from itertools import groupby

import psycopg
from django.db import connection, transaction
from psycopg.types.json import Jsonb

from facts.models import (
    IDENTITY_BLOCKS_PER_SCOPE,
    ConflictSet,
    Event,
    Fact,
    FactStatus,
    IdentityBlock,
    Procedure,
)
from facts.locks import lock_scopes
from facts.procedures import procedure_embedding_text
from facts.text import text_hash
from hakimem.embeddings import Embedder, vector_literal
from portability.records import (
    CHUNK,
    CONFLICT_FIELDS,
    IDENTITY_BLOCK_FIELDS,
    PROCEDURE_FIELDS,
    ImportRefused,
    Line,
    chunked,
    raw_lines,
    read_file,
)

# --- checking against the database --------------------------------------------------------------------------

_KIND_ORDER = {"event": 0, "fact": 1, "conflict_set": 2, "identity_block": 3, "procedure": 4}
_TABLE = {
    "event": Event,
    "fact": Fact,
    "conflict_set": ConflictSet,
    "identity_block": IdentityBlock,
    "procedure": Procedure,
}
_COUNT_KEY = {
    "event": "events",
    "fact": "facts",
    "conflict_set": "conflict_sets",
    "identity_block": "identity_blocks",
    "procedure": "procedures",
}
_A = {
    "event": "an event",
    "fact": "a fact",
    "conflict_set": "a conflict set",
    "identity_block": "an identity block",
    "procedure": "a procedure",
}


def _zero_counts() -> dict[str, int]:
    return dict.fromkeys(_COUNT_KEY.values(), 0)


@dataclass
class ImportReport:
    scopes: int = 0
    written: dict[str, int] = field(default_factory=_zero_counts)
    skipped: dict[str, int] = field(default_factory=_zero_counts)
    embeddings_kept: int = 0
    embeddings_computed: int = 0


def _existing(kind: str, lines: list[Line]) -> dict[uuid.UUID, tuple[str, str]]:
    """The rows of the table behind `kind` that already hold one of the lines' ids, with their scope."""
    return {
        row[0]: (row[1], row[2])
        for row in _TABLE[kind]
        .objects.filter(id__in=[line.record["id"] for line in lines])
        .values_list("id", "project_id", "subject_id")
    }


def _taken_texts(lines: list[Line]) -> dict[tuple, uuid.UUID]:
    """Active facts of the lines' scopes that already carry an active line's text, under another id."""
    active = [line for line in lines if line.kind == "fact" and line.record["status"] == FactStatus.ACTIVE]
    if not active:
        return {}
    keys = [(*line.scope, text_hash(line.record["text"])) for line in active]
    # -- uses: fact_active_text_unique_in_scope
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT f.project_id, f.subject_id, f.text_hash, f.id FROM facts_fact f"
            " JOIN unnest(%s::text[], %s::text[], %s::text[]) AS k(p, s, h)"
            "   ON f.project_id = k.p AND f.subject_id = k.s AND f.text_hash = k.h"
            " WHERE f.status = 'active'",
            [[k[0] for k in keys], [k[1] for k in keys], [k[2] for k in keys]],
        )
        return {(p, s, h): fact_id for p, s, h, fact_id in cursor.fetchall()}


def _check_identity_blocks(lines: list[Line], pending: Counter) -> None:
    """The rules identity_block_create keeps, against the database: a name not taken in its scope, at most
    IDENTITY_BLOCKS_PER_SCOPE blocks per scope. `pending`: the scopes' blocks that earlier lines of the file
    hold and the database does not yet (the first pass writes nothing)."""
    if not lines:
        return
    scopes = sorted({line.scope for line in lines})
    held: dict[tuple[str, str], dict[str, uuid.UUID]] = {scope: {} for scope in scopes}
    # -- uses: identity_block_name_unique_in_scope (a scope's blocks are few: IDENTITY_BLOCKS_PER_SCOPE at most)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT b.project_id, b.subject_id, b.name, b.id FROM facts_identityblock b"
            " JOIN unnest(%s::text[], %s::text[]) AS k(p, s) ON b.project_id = k.p AND b.subject_id = k.s",
            [[scope[0] for scope in scopes], [scope[1] for scope in scopes]],
        )
        for project_id, subject_id, name, block_id in cursor.fetchall():
            held[(project_id, subject_id)][name] = block_id
    count = Counter({scope: len(held[scope]) + pending[scope] for scope in scopes})
    for line in lines:
        owner = held[line.scope].get(line.record["name"])
        if owner is not None:
            raise ImportRefused(
                f"the scope already holds an identity block with this name ({owner})", line=line.number, field="name"
            )
        count[line.scope] += 1
        if count[line.scope] > IDENTITY_BLOCKS_PER_SCOPE:
            raise ImportRefused(
                f"scope {line.scope[0]}/{line.scope[1]} would hold more than "
                f"{IDENTITY_BLOCKS_PER_SCOPE} identity blocks",
                line=line.number,
                field="subject_id",
            )


def _check_chunk(chunk: list[Line], *, skip_existing: bool, pending: Counter | None = None) -> set[int]:
    """Refuse what the database already holds; returns the line numbers to skip (existing rows of the same
    scope, with skip_existing). `pending`: see _check_identity_blocks."""
    skip: set[int] = set()
    for kind, group in groupby(sorted(chunk, key=lambda line: _KIND_ORDER[line.kind]), key=lambda line: line.kind):
        group = list(group)
        existing = _existing(kind, group)
        for line in group:
            scope = existing.get(line.record["id"])
            if scope is None:
                continue
            if not skip_existing:
                raise ImportRefused(
                    f"{_A[kind]} with id {line.record['id']} exists already (--skip-existing skips it)",
                    line=line.number,
                    field="id",
                )
            if scope != line.scope:
                raise ImportRefused(
                    f"{_A[kind]} with id {line.record['id']} exists already in another scope ({scope[0]}/{scope[1]})",
                    line=line.number,
                    field="id",
                )
            skip.add(line.number)
    taken = _taken_texts([line for line in chunk if line.number not in skip])
    for line in chunk:
        if line.kind == "fact" and line.number not in skip:
            owner = taken.get((*line.scope, text_hash(line.record["text"])))
            if owner is not None and owner != line.record["id"] and line.record["status"] == FactStatus.ACTIVE:
                raise ImportRefused(
                    f"the scope already holds an active fact with this text ({owner})", line=line.number, field="text"
                )
    _check_identity_blocks(
        [line for line in chunk if line.kind == "identity_block" and line.number not in skip],
        pending if pending is not None else Counter(),
    )
    return skip


def import_check(path, *, skip_existing: bool, progress=lambda n: None) -> tuple[dict, int]:
    """Pass 1: every line, and what the database already holds. Returns the header and the number of scopes."""
    header, lines = read_file(path, progress)
    counts = _zero_counts()
    done_scopes: set[tuple[str, str]] = set()
    current = None
    names: set[str] = set()  # the identity block names of the current scope
    pending: Counter = Counter()  # identity blocks to write, per scope
    for chunk in chunked(lines, CHUNK):
        for line in chunk:
            counts[_COUNT_KEY[line.kind]] += 1
            if line.scope != current:
                if line.scope in done_scopes:
                    raise ImportRefused(
                        f"scope {line.scope[0]}/{line.scope[1]} appeared earlier in the file: keep each scope's "
                        "records together, as export_scope writes them",
                        line=line.number,
                        field="subject_id",
                    )
                if current is not None:
                    done_scopes.add(current)
                current, names = line.scope, set()
            if line.kind == "identity_block":
                if line.record["name"] in names:
                    raise ImportRefused(
                        "an identity block of the same scope earlier in the file has this name",
                        line=line.number,
                        field="name",
                    )
                names.add(line.record["name"])
        skip = _check_chunk(chunk, skip_existing=skip_existing, pending=pending)
        pending.update(line.scope for line in chunk if line.kind == "identity_block" and line.number not in skip)
    if current is not None:
        done_scopes.add(current)
    expected = header.get("counts")
    # A file written before identity blocks and procedures were exported counts none.
    if expected is not None and {k: expected.get(k, 0) for k in counts} != counts:
        raise ImportRefused(
            f"the header announces {expected} but the file holds {counts}: truncated or edited?", line=1, field="counts"
        )
    return header, len(done_scopes)


# --- writing -------------------------------------------------------------------------------------------------

_COPY = {
    "event": "COPY facts_event (id, project_id, subject_id, text, occurred_at, recorded_at, metadata, embedding)"
    " FROM STDIN",
    "fact": "COPY facts_fact (id, project_id, subject_id, text, text_hash, status, category, kind, importance,"
    " volatility, valid_from, valid_to, recorded_from, recorded_to, last_confirmed_at, superseded_by_id,"
    " source_event_id, metadata, embedding) FROM STDIN",
    "conflict_set": "COPY facts_conflictset (id, project_id, subject_id, status, signal, signal_detail, similarity,"
    " opened_at, resolved_at, resolved_by, note, reading) FROM STDIN",
    "member": "COPY facts_conflictmember (project_id, conflict_set_id, fact_id, added_at, kept) FROM STDIN",
    "identity_block": "COPY facts_identityblock (id, project_id, subject_id, name, text, position, enabled, metadata,"
    " created_at, updated_at) FROM STDIN",
    "procedure": "COPY facts_procedure (id, project_id, subject_id, title, text, category, importance, status,"
    " metadata, created_at, updated_at, embedding) FROM STDIN",
}
_COPY_LINE = re.compile(r"\bline (\d+)")


def _row(kind: str, r: dict, vector: str | None) -> tuple:
    if kind == "event":
        return (
            r["id"],
            r["project_id"],
            r["subject_id"],
            r["text"],
            r["occurred_at"],
            r["recorded_at"],
            Jsonb(r["metadata"]),
            vector,
        )
    if kind == "fact":
        return (
            r["id"],
            r["project_id"],
            r["subject_id"],
            r["text"],
            text_hash(r["text"]),
            r["status"],
            r["category"],
            r["kind"],
            r["importance"],
            r["volatility"],
            r["valid_from"],
            r["valid_to"],
            r["recorded_from"],
            r["recorded_to"],
            r["last_confirmed_at"],
            r["superseded_by"],
            r["source_event"],
            Jsonb(r["metadata"]),
            vector,
        )
    if kind == "identity_block":
        return tuple(Jsonb(r[name]) if name == "metadata" else r[name] for name in IDENTITY_BLOCK_FIELDS)
    if kind == "procedure":
        return (*(Jsonb(r[name]) if name == "metadata" else r[name] for name in PROCEDURE_FIELDS), vector)
    return tuple(Jsonb(r[name] or {}) if name == "reading" else r[name] for name in CONFLICT_FIELDS)


def _embedded_text(line: Line) -> str:
    """What a record's vector is computed from, as the write path computes it."""
    if line.kind == "procedure":
        return procedure_embedding_text(line.record["title"], line.record["text"])
    return line.record["text"]


def _copy(cursor, statement: str, rows: list[tuple], numbers: list[int]) -> None:
    """COPY the rows; a row the database refuses is reported with its line in the file."""
    try:
        with cursor.copy(statement) as copy:
            for row in rows:
                copy.write_row(row)
    except psycopg.Error as exc:
        diag = exc.diag
        found = _COPY_LINE.search(diag.context or "")
        line = numbers[int(found.group(1)) - 1] if found and int(found.group(1)) <= len(numbers) else None
        message = diag.message_primary or str(exc)
        if diag.message_detail:
            message += f" ({diag.message_detail})"
        raise ImportRefused(message, line=line) from exc


@dataclass
class _Writer:
    embedder: Embedder
    keep_vectors: bool  # the file's vectors come from the configured embedder
    skip_existing: bool
    report: ImportReport

    def write(self, kind: str, lines: list[Line]) -> None:
        skip = _check_chunk(lines, skip_existing=self.skip_existing)
        lines = [line for line in lines if line.number not in skip]
        self.report.skipped[_COUNT_KEY[kind]] += len(skip)
        if not lines:
            return
        numbers = [line.number for line in lines]
        with connection.cursor() as cursor:
            if kind == "conflict_set":
                _copy(cursor, _COPY[kind], [_row(kind, line.record, None) for line in lines], numbers)
                members = [(line, m) for line in lines for m in line.record["members"]]
                _copy(
                    cursor,
                    _COPY["member"],
                    [
                        (line.record["project_id"], line.record["id"], m["fact"], m["added_at"], m["kept"])
                        for line, m in members
                    ],
                    [line.number for line, _ in members],
                )
            elif kind == "identity_block":  # served whole, never searched: no vector
                _copy(cursor, _COPY[kind], [_row(kind, line.record, None) for line in lines], numbers)
            else:
                _copy(
                    cursor,
                    _COPY[kind],
                    [_row(kind, line.record, v) for line, v in zip(lines, self._vectors(lines))],
                    numbers,
                )
        self.report.written[_COUNT_KEY[kind]] += len(lines)

    def _vectors(self, lines: list[Line]) -> list[str]:
        """The file's vector where it is usable, else one computed by the configured embedder."""
        vectors: list[str | None] = [None] * len(lines)
        missing = []
        for i, line in enumerate(lines):
            given = line.record.get("embedding")
            if self.keep_vectors and given is not None and len(given) == self.embedder.dim:
                vectors[i] = vector_literal(given)
            else:
                missing.append(i)
        if missing:
            computed = self.embedder.embed([_embedded_text(lines[i]) for i in missing])
            for i, vector in zip(missing, computed):
                vectors[i] = vector_literal(vector)
        self.report.embeddings_kept += len(lines) - len(missing)
        self.report.embeddings_computed += len(missing)
        return vectors


# The references a scope's rows hold must lead to rows of the same scope: an erasure deletes a scope's rows
# with plain DELETEs, and a reference from elsewhere would then break its commit.
_DANGLING_SQL = """
SELECT 'fact', f.id, 'superseded_by', f.superseded_by_id FROM facts_fact f
  LEFT JOIN facts_fact t ON t.id = f.superseded_by_id
 WHERE f.project_id = %(p)s AND f.subject_id = %(s)s AND f.superseded_by_id IS NOT NULL
   AND (t.id IS NULL OR t.project_id <> f.project_id OR t.subject_id <> f.subject_id)
UNION ALL
SELECT 'fact', f.id, 'source_event', f.source_event_id FROM facts_fact f
  LEFT JOIN facts_event t ON t.id = f.source_event_id
 WHERE f.project_id = %(p)s AND f.subject_id = %(s)s AND f.source_event_id IS NOT NULL
   AND (t.id IS NULL OR t.project_id <> f.project_id OR t.subject_id <> f.subject_id)
UNION ALL
SELECT 'conflict_set', c.id, 'members', m.fact_id FROM facts_conflictset c
  JOIN facts_conflictmember m ON m.conflict_set_id = c.id
  LEFT JOIN facts_fact t ON t.id = m.fact_id
 WHERE c.project_id = %(p)s AND c.subject_id = %(s)s
   AND (t.id IS NULL OR t.project_id <> c.project_id OR t.subject_id <> c.subject_id)
LIMIT 1
"""


def _check_references(path, scope: tuple[str, str]) -> None:
    with connection.cursor() as cursor:
        cursor.execute(_DANGLING_SQL, {"p": scope[0], "s": scope[1]})
        found = cursor.fetchone()
    if found is None:
        return
    kind, row_id, name, target = found
    raise ImportRefused(
        f"{target} is not a {'fact' if name != 'source_event' else 'event'} of scope {scope[0]}/{scope[1]}",
        line=_line_of(path, kind, row_id),
        field=name,
    )


def _line_of(path, kind: str, row_id) -> int | None:
    """The line of a record, found again by scanning the file: only on the error path, to point at it."""
    needle = str(row_id).encode()
    for number, raw in raw_lines(path, lambda n: None):
        if needle in raw:
            record = json.loads(raw)
            if record.get("type") == kind and record.get("id") == str(row_id):
                return number
    return None


def import_write(
    path, *, header: dict, skip_existing: bool, embedder: Embedder, progress=lambda n: None
) -> ImportReport:
    """Pass 2: scope by scope, one transaction and the scope's lock each."""
    report = ImportReport()
    identity = embedder.identity()
    writer = _Writer(
        embedder, keep_vectors=header.get("embedding") == identity, skip_existing=skip_existing, report=report
    )
    _, lines = read_file(path, progress)
    for scope, scope_lines in groupby(lines, key=lambda line: line.scope):
        try:
            with transaction.atomic():
                lock_scopes([scope])
                for kind, kind_lines in groupby(scope_lines, key=lambda line: line.kind):
                    for chunk in chunked(kind_lines, CHUNK):
                        writer.write(kind, chunk)
                _check_references(path, scope)
        except ImportRefused as exc:
            exc.scopes_written, exc.scope = report.scopes, scope
            raise
        report.scopes += 1
    return report
