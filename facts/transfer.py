"""Moving memory between instances: a scope's facts (every version and status), events, conflict sets, identity
blocks and procedures as JSON lines (`manage.py export_scope`, `manage.py import_jsonl`).

The file: a header line, then one record per line, grouped by scope (subject), each scope's events first, then
its facts, its conflict sets with their members, its identity blocks and its procedures. A project's export
also carries the project-wide identity blocks and procedures, as the scope of subject_id "" (first: "" sorts
before every subject); a subject's export carries only the subject's own.

    {"type": "header", "format": "hakimem-jsonl", "version": 1, "exporter": ..., "exported_at": ...,
     "scope": {"project_id": ..., "subject_id": ... or null}, "with_embeddings": false,
     "embedding": {"provider": ..., "model": ..., "dimension": 384},
     "counts": {"events": n, "facts": n, "conflict_sets": n, "identity_blocks": n, "procedures": n}}
    {"type": "event", "id": ..., "project_id": ..., "subject_id": ..., "text": ..., "occurred_at": ..., ...}
    {"type": "fact", "id": ..., "status": "superseded", "superseded_by": ..., "recorded_to": ..., ...}
    {"type": "conflict_set", "id": ..., "status": "open", ..., "members": [{"fact": ..., "added_at": ..., "kept": null}]}
    {"type": "identity_block", "id": ..., "subject_id": "", "name": ..., "position": 0, "enabled": true, ...}
    {"type": "procedure", "id": ..., "title": ..., "text": ..., "status": "retracted", ...}

A file of this version written before identity blocks and procedures existed has neither record nor count:
it reads as having none.

Ids, statuses and every timestamp are kept, so export, erase, import, export gives the same records. What is
derived is not exported: text_hash and the search vector (recomputed), the embeddings unless asked for. Traces
are not exported: they record this instance's context calls.

Import restores a state verbatim: no de-duplication, no conflict detection (the conflict sets come with the
file). It reads the file twice and never holds more than a chunk of it:
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
import math
import re
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from itertools import groupby, islice
from operator import itemgetter

import psycopg
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models.functions import Collate
from django.utils import timezone
from psycopg.types.json import Jsonb

from facts.models import (
    CATEGORY_MAX,
    EVENT_TEXT_MAX,
    FACT_TEXT_MAX,
    IDENTITY_BLOCKS_PER_SCOPE,
    IDENTITY_NAME_MAX,
    IDENTITY_TEXT_MAX,
    PROCEDURE_TEXT_MAX,
    PROCEDURE_TITLE_MAX,
    RESOLVED_BY_MAX,
    SIGNAL_DETAIL_MAX,
    ConflictMember,
    ConflictSet,
    ConflictStatus,
    Event,
    Fact,
    FactKind,
    FactStatus,
    IdentityBlock,
    Procedure,
    ProcedureStatus,
    Volatility,
    validate_scope_id_or_project_wide,
)
from facts.serializers import POSITION_MAX
from facts.locks import lock_scopes as _lock_scopes
from facts.procedures import procedure_embedding_text
from facts.text import text_hash
from hakimem.embeddings import Embedder, vector_literal
from hakimem.validators import validate_scope_id

FORMAT = "hakimem-jsonl"
VERSION = 1
EXPORTER = "hakimem manage.py export_scope"
CHUNK = 1000  # rows per server-side fetch, per existence check and per COPY

EVENT_FIELDS = ("id", "project_id", "subject_id", "text", "occurred_at", "recorded_at", "metadata")
FACT_FIELDS = (
    "id", "project_id", "subject_id", "text", "status", "category", "kind", "importance", "volatility",
    "valid_from", "valid_to", "recorded_from", "recorded_to", "last_confirmed_at", "superseded_by", "source_event",
    "metadata",
)
CONFLICT_FIELDS = (
    "id", "project_id", "subject_id", "status", "signal", "signal_detail", "similarity", "opened_at", "resolved_at",
    "resolved_by", "note", "reading",
)
MEMBER_FIELDS = ("fact", "added_at", "kept")
IDENTITY_BLOCK_FIELDS = (
    "id", "project_id", "subject_id", "name", "text", "position", "enabled", "metadata", "created_at", "updated_at",
)
PROCEDURE_FIELDS = (
    "id", "project_id", "subject_id", "title", "text", "category", "importance", "status", "metadata", "created_at",
    "updated_at",
)
# The column behind each exported name, where they differ.
_COLUMN = {"superseded_by": "superseded_by_id", "source_event": "source_event_id"}


# --- export -------------------------------------------------------------------------------------------------

def _json_value(value):
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def _record(kind: str, names: Iterable[str], row: dict) -> dict:
    record = {"type": kind}
    for name in names:
        record[name] = _json_value(row[_COLUMN.get(name, name)])
    if "embedding" in row:
        record["embedding"] = row["embedding"].to_list()
    return record


def _by_subject(queryset, columns: list[str]):
    # COLLATE "C": subjects in code-point order, as Python compares them when the three streams are merged.
    rows = queryset.order_by(Collate("subject_id", "C"), "id").values(*columns).iterator(chunk_size=CHUNK)
    return groupby(rows, key=itemgetter("subject_id"))


def _chunked(iterable: Iterable, size: int) -> Iterator[list]:
    iterator = iter(iterable)
    while chunk := list(islice(iterator, size)):
        yield chunk


def _conflict_records(rows) -> Iterator[dict]:
    for chunk in _chunked(rows, CHUNK):
        members: dict[uuid.UUID, list[dict]] = {row["id"]: [] for row in chunk}
        for member in (
            ConflictMember.objects.filter(conflict_set_id__in=list(members))
            .order_by("added_at", "fact_id").values("conflict_set_id", "fact_id", "added_at", "kept")
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
        "type": "header", "format": FORMAT, "version": VERSION, "exporter": EXPORTER,
        "exported_at": timezone.now().isoformat(),
        "scope": {"project_id": project_id, "subject_id": subject_id},
        "with_embeddings": with_embeddings, "embedding": embedder.identity(),
        "counts": {"events": events.count(), "facts": facts.count(), "conflict_sets": conflicts.count(),
                   "identity_blocks": blocks.count(), "procedures": procedures.count()},
    }
    vector = ["embedding"] if with_embeddings else []
    streams = [
        (lambda rows: (_record("event", EVENT_FIELDS, r) for r in rows),
         _by_subject(events, [_COLUMN.get(n, n) for n in EVENT_FIELDS] + vector)),
        (lambda rows: (_record("fact", FACT_FIELDS, r) for r in rows),
         _by_subject(facts, [_COLUMN.get(n, n) for n in FACT_FIELDS] + vector)),
        (_conflict_records, _by_subject(conflicts, list(CONFLICT_FIELDS))),
        (lambda rows: (_record("identity_block", IDENTITY_BLOCK_FIELDS, r) for r in rows),
         _by_subject(blocks, list(IDENTITY_BLOCK_FIELDS))),
        (lambda rows: (_record("procedure", PROCEDURE_FIELDS, r) for r in rows),
         _by_subject(procedures, list(PROCEDURE_FIELDS) + vector)),
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


def dumps(record: dict) -> str:
    return json.dumps(record, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


# --- import: reading and checking lines ---------------------------------------------------------------------

class ImportRefused(Exception):
    """The file cannot be imported; `line` (1-based, None for the whole file) and `field` say where."""

    def __init__(self, message: str, *, line: int | None = None, field: str | None = None):
        where = " ".join(part for part in (f"line {line}" if line else "", f"field {field!r}" if field else "") if part)
        super().__init__(f"{where}: {message}" if where else message)
        self.line, self.field, self.reason = line, field, message
        self.scopes_written: int | None = None  # set when refused while writing: the scopes committed before
        self.scope: tuple[str, str] | None = None  # the scope rolled back


def _str(value, *, max_length: int | None = None, min_length: int = 0):
    if not isinstance(value, str):
        raise ValueError("must be a string")
    if len(value) < min_length or (max_length is not None and len(value) > max_length):
        raise ValueError(f"must be {min_length} to {max_length} characters" if max_length else "must not be empty")
    return value


def _text(max_length: int) -> Callable:
    return lambda value: _str(value, min_length=1, max_length=max_length)


def _short(max_length: int) -> Callable:
    return lambda value: _str(value, max_length=max_length)


def _uuid(value):
    try:
        return uuid.UUID(_str(value))
    except (ValueError, AttributeError):
        raise ValueError("must be a UUID") from None


def _scope_id(value):
    try:
        validate_scope_id(value)
    except ValidationError as exc:
        raise ValueError(exc.messages[0]) from None
    return value


def _scope_id_or_project_wide(value):
    try:
        validate_scope_id_or_project_wide(_str(value))
    except ValidationError as exc:
        raise ValueError(exc.messages[0]) from None
    return value


def _boolean(value):
    if not isinstance(value, bool):
        raise ValueError("must be true or false")
    return value


def _position(value):
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= POSITION_MAX:
        raise ValueError(f"must be an integer from 0 to {POSITION_MAX}")
    return value


def _choice(values) -> Callable:
    def parse(value):
        if value not in values:
            raise ValueError(f"must be one of {', '.join(values)}")
        return value
    return parse


def _number(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError("must be a finite number")
    return float(value)


def _unit(value):
    value = _number(value)
    if not 0 <= value <= 1:
        raise ValueError("must be between 0 and 1")
    return value


def _when(value):
    try:
        parsed = datetime.fromisoformat(_str(value))
    except ValueError:
        raise ValueError("must be an ISO 8601 timestamp") from None
    if parsed.tzinfo is None:
        raise ValueError("must be an ISO 8601 timestamp with an offset")
    return parsed


def _object(value):
    if not isinstance(value, dict):
        raise ValueError("must be a JSON object")
    return value


def _kept(value):
    if value is not None and not isinstance(value, bool):
        raise ValueError("must be true, false or null")
    return value


def _embedding(value):
    if not isinstance(value, list) or not value:
        raise ValueError("must be a list of numbers")
    try:
        vector_literal([_number(v) for v in value])  # finite and within float16's range, as the column stores it
    except ValueError as exc:
        raise ValueError(f"must be a list of finite numbers ({exc})") from None
    return value


def _nullable(parse: Callable) -> Callable:
    return lambda value: None if value is None else parse(value)


_REQUIRED, _OPTIONAL = True, False
_SCOPE = {"id": (_uuid, _REQUIRED), "project_id": (_scope_id, _REQUIRED), "subject_id": (_scope_id, _REQUIRED)}
_SCOPE_OR_PROJECT = {**_SCOPE, "subject_id": (_scope_id_or_project_wide, _REQUIRED)}
SCHEMAS: dict[str, dict[str, tuple[Callable, bool]]] = {
    "event": {
        **_SCOPE, "text": (_text(EVENT_TEXT_MAX), _REQUIRED), "occurred_at": (_when, _REQUIRED),
        "recorded_at": (_when, _REQUIRED), "metadata": (_object, _REQUIRED),
        "embedding": (_nullable(_embedding), _OPTIONAL),
    },
    "fact": {
        **_SCOPE, "text": (_text(FACT_TEXT_MAX), _REQUIRED), "status": (_choice(FactStatus.values), _REQUIRED),
        "category": (_short(CATEGORY_MAX), _REQUIRED), "kind": (_choice(FactKind.values), _REQUIRED),
        "importance": (_unit, _REQUIRED), "volatility": (_choice(Volatility.values), _REQUIRED),
        "valid_from": (_nullable(_when), _REQUIRED), "valid_to": (_nullable(_when), _REQUIRED),
        "recorded_from": (_when, _REQUIRED), "recorded_to": (_nullable(_when), _REQUIRED),
        "last_confirmed_at": (_when, _REQUIRED), "superseded_by": (_nullable(_uuid), _REQUIRED),
        "source_event": (_nullable(_uuid), _REQUIRED), "metadata": (_object, _REQUIRED),
        "embedding": (_nullable(_embedding), _OPTIONAL),
    },
    "conflict_set": {
        **_SCOPE, "status": (_choice(ConflictStatus.values), _REQUIRED), "signal": (_text(32), _REQUIRED),
        "signal_detail": (_short(SIGNAL_DETAIL_MAX), _REQUIRED), "similarity": (_number, _REQUIRED),
        "opened_at": (_when, _REQUIRED), "resolved_at": (_nullable(_when), _REQUIRED),
        "resolved_by": (_short(RESOLVED_BY_MAX), _REQUIRED), "note": (_str, _REQUIRED),
        "reading": (_object, _OPTIONAL),  # absent from exports written before sets kept what was read
        "members": (lambda value: value, _REQUIRED),  # checked by _members, each member with its own field name
    },
    "identity_block": {
        **_SCOPE_OR_PROJECT, "name": (_text(IDENTITY_NAME_MAX), _REQUIRED), "text": (_text(IDENTITY_TEXT_MAX), _REQUIRED),
        "position": (_position, _REQUIRED), "enabled": (_boolean, _REQUIRED), "metadata": (_object, _REQUIRED),
        "created_at": (_when, _REQUIRED), "updated_at": (_when, _REQUIRED),
    },
    "procedure": {
        **_SCOPE_OR_PROJECT, "title": (_text(PROCEDURE_TITLE_MAX), _REQUIRED),
        "text": (_text(PROCEDURE_TEXT_MAX), _REQUIRED), "category": (_short(CATEGORY_MAX), _REQUIRED),
        "importance": (_unit, _REQUIRED), "status": (_choice(ProcedureStatus.values), _REQUIRED),
        "metadata": (_object, _REQUIRED), "created_at": (_when, _REQUIRED), "updated_at": (_when, _REQUIRED),
        "embedding": (_nullable(_embedding), _OPTIONAL),
    },
}
_MEMBER_SCHEMA = {"fact": _uuid, "added_at": _when, "kept": _kept}


def _fields(record: dict, schema: dict, line: int, prefix: str = "") -> dict:
    unknown = sorted(set(record) - set(schema) - {"type"})
    if unknown:
        raise ImportRefused("unknown field", line=line, field=prefix + unknown[0])
    parsed = {}
    for name, (parse, required) in schema.items():
        if name not in record:
            if required:
                raise ImportRefused("missing", line=line, field=prefix + name)
            parsed[name] = None
            continue
        try:
            parsed[name] = parse(record[name])
        except ValueError as exc:
            raise ImportRefused(str(exc), line=line, field=prefix + name) from None
    return parsed


def _members(value, line: int) -> list[dict]:
    if not isinstance(value, list):
        raise ImportRefused("must be a list", line=line, field="members")
    members, seen = [], set()
    for i, member in enumerate(value):
        if not isinstance(member, dict):
            raise ImportRefused("must be an object", line=line, field=f"members[{i}]")
        schema = {name: (parse, _REQUIRED) for name, parse in _MEMBER_SCHEMA.items()}
        parsed = _fields(member, schema, line, prefix=f"members[{i}].")
        if parsed["fact"] in seen:
            raise ImportRefused("the same fact twice in a set", line=line, field=f"members[{i}].fact")
        seen.add(parsed["fact"])
        members.append(parsed)
    return members


def _invariants(kind: str, r: dict, line: int) -> None:
    """The rules the database would enforce, reported with the line and field instead of a constraint name."""
    def refuse(name: str, message: str):
        raise ImportRefused(message, line=line, field=name)

    if kind == "fact":
        if r["valid_from"] and r["valid_to"] and r["valid_from"] > r["valid_to"]:
            refuse("valid_to", "is before valid_from")
        if (r["status"] == FactStatus.ACTIVE) != (r["recorded_to"] is None):
            refuse("recorded_to", "must be null exactly when the fact is active")
        if r["status"] == FactStatus.SUPERSEDED and r["superseded_by"] is None:
            refuse("superseded_by", "a superseded fact names its successor")
        if r["superseded_by"] == r["id"]:
            refuse("superseded_by", "a fact cannot supersede itself")
    elif kind == "conflict_set":
        if (r["status"] == ConflictStatus.OPEN) != (r["resolved_at"] is None):
            refuse("resolved_at", "must be null exactly when the set is open")


@dataclass
class Line:
    number: int
    kind: str
    record: dict  # parsed: UUIDs, datetimes

    @property
    def scope(self) -> tuple[str, str]:
        return self.record["project_id"], self.record["subject_id"]


def _parse(number: int, raw: bytes) -> Line:
    try:
        record = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ImportRefused(f"not a JSON line ({exc})", line=number) from None
    if not isinstance(record, dict):
        raise ImportRefused("not a JSON object", line=number)
    kind = record.get("type")
    if kind not in SCHEMAS:
        raise ImportRefused(f"must be one of {', '.join(SCHEMAS)}", line=number, field="type")
    parsed = _fields(record, SCHEMAS[kind], number)
    if kind == "conflict_set":
        parsed["members"] = _members(record["members"], number)
    _invariants(kind, parsed, number)
    return Line(number, kind, parsed)


def _header(number: int, raw: bytes) -> dict:
    try:
        header = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        header = None
    if not isinstance(header, dict) or header.get("type") != "header":
        raise ImportRefused("the first line must be the header ({\"type\": \"header\", ...})", line=number, field="type")
    if header.get("format") != FORMAT:
        raise ImportRefused(f"must be {FORMAT!r}", line=number, field="format")
    if header.get("version") != VERSION:
        raise ImportRefused(f"version {header.get('version')!r} is not supported (this hakimem reads {VERSION})",
                            line=number, field="version")
    embedding = header.get("embedding")
    if not isinstance(embedding, dict):
        raise ImportRefused("must be an object with provider, model, dimension", line=number, field="embedding")
    counts = header.get("counts")
    if counts is not None and not (
        isinstance(counts, dict) and all(isinstance(counts.get(k), int) for k in ("events", "facts", "conflict_sets"))
        and all(isinstance(counts.get(k, 0), int) for k in ("identity_blocks", "procedures"))
    ):
        raise ImportRefused("must hold events, facts and conflict_sets (and identity_blocks, procedures, if given) as "
                            "integers", line=number, field="counts")
    return header


def _read(path, progress) -> Iterator[tuple[int, bytes]]:
    """The file's non-blank lines with their numbers; advances `progress` by bytes."""
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            progress(len(raw))
            if raw.strip():
                yield number, raw


def _lines(path, progress) -> tuple[dict, Iterator[Line]]:
    lines = _read(path, progress)
    first = next(lines, None)
    if first is None:
        raise ImportRefused("the file is empty")
    header = _header(*first)
    return header, (_parse(number, raw) for number, raw in lines)


_KIND_ORDER = {"event": 0, "fact": 1, "conflict_set": 2, "identity_block": 3, "procedure": 4}
_TABLE = {"event": Event, "fact": Fact, "conflict_set": ConflictSet, "identity_block": IdentityBlock,
          "procedure": Procedure}
_COUNT_KEY = {"event": "events", "fact": "facts", "conflict_set": "conflict_sets", "identity_block": "identity_blocks",
              "procedure": "procedures"}
_A = {"event": "an event", "fact": "a fact", "conflict_set": "a conflict set", "identity_block": "an identity block",
      "procedure": "a procedure"}


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
        for row in _TABLE[kind].objects.filter(id__in=[line.record["id"] for line in lines])
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
            raise ImportRefused(f"the scope already holds an identity block with this name ({owner})",
                                line=line.number, field="name")
        count[line.scope] += 1
        if count[line.scope] > IDENTITY_BLOCKS_PER_SCOPE:
            raise ImportRefused(f"scope {line.scope[0]}/{line.scope[1]} would hold more than "
                                f"{IDENTITY_BLOCKS_PER_SCOPE} identity blocks", line=line.number, field="subject_id")


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
                raise ImportRefused(f"{_A[kind]} with id {line.record['id']} exists already (--skip-existing skips it)",
                                    line=line.number, field="id")
            if scope != line.scope:
                raise ImportRefused(f"{_A[kind]} with id {line.record['id']} exists already in another scope "
                                    f"({scope[0]}/{scope[1]})", line=line.number, field="id")
            skip.add(line.number)
    taken = _taken_texts([line for line in chunk if line.number not in skip])
    for line in chunk:
        if line.kind == "fact" and line.number not in skip:
            owner = taken.get((*line.scope, text_hash(line.record["text"])))
            if owner is not None and owner != line.record["id"] and line.record["status"] == FactStatus.ACTIVE:
                raise ImportRefused(f"the scope already holds an active fact with this text ({owner})",
                                    line=line.number, field="text")
    _check_identity_blocks([line for line in chunk if line.kind == "identity_block" and line.number not in skip],
                           pending if pending is not None else Counter())
    return skip


def import_check(path, *, skip_existing: bool, progress=lambda n: None) -> tuple[dict, int]:
    """Pass 1: every line, and what the database already holds. Returns the header and the number of scopes."""
    header, lines = _lines(path, progress)
    counts = _zero_counts()
    done_scopes: set[tuple[str, str]] = set()
    current = None
    names: set[str] = set()  # the identity block names of the current scope
    pending: Counter = Counter()  # identity blocks to write, per scope
    for chunk in _chunked(lines, CHUNK):
        for line in chunk:
            counts[_COUNT_KEY[line.kind]] += 1
            if line.scope != current:
                if line.scope in done_scopes:
                    raise ImportRefused(
                        f"scope {line.scope[0]}/{line.scope[1]} appeared earlier in the file: keep each scope's "
                        "records together, as export_scope writes them", line=line.number, field="subject_id",
                    )
                if current is not None:
                    done_scopes.add(current)
                current, names = line.scope, set()
            if line.kind == "identity_block":
                if line.record["name"] in names:
                    raise ImportRefused("an identity block of the same scope earlier in the file has this name",
                                        line=line.number, field="name")
                names.add(line.record["name"])
        skip = _check_chunk(chunk, skip_existing=skip_existing, pending=pending)
        pending.update(line.scope for line in chunk if line.kind == "identity_block" and line.number not in skip)
    if current is not None:
        done_scopes.add(current)
    expected = header.get("counts")
    # A file written before identity blocks and procedures were exported counts none.
    if expected is not None and {k: expected.get(k, 0) for k in counts} != counts:
        raise ImportRefused(f"the header announces {expected} but the file holds {counts}: truncated or edited?",
                            line=1, field="counts")
    return header, len(done_scopes)


# --- import: writing ----------------------------------------------------------------------------------------

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
        return (r["id"], r["project_id"], r["subject_id"], r["text"], r["occurred_at"], r["recorded_at"],
                Jsonb(r["metadata"]), vector)
    if kind == "fact":
        return (r["id"], r["project_id"], r["subject_id"], r["text"], text_hash(r["text"]), r["status"],
                r["category"], r["kind"], r["importance"], r["volatility"], r["valid_from"], r["valid_to"],
                r["recorded_from"], r["recorded_to"], r["last_confirmed_at"], r["superseded_by"], r["source_event"],
                Jsonb(r["metadata"]), vector)
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
                _copy(cursor, _COPY["member"],
                      [(line.record["project_id"], line.record["id"], m["fact"], m["added_at"], m["kept"])
                       for line, m in members],
                      [line.number for line, _ in members])
            elif kind == "identity_block":  # served whole, never searched: no vector
                _copy(cursor, _COPY[kind], [_row(kind, line.record, None) for line in lines], numbers)
            else:
                _copy(cursor, _COPY[kind], [_row(kind, line.record, v) for line, v in zip(lines, self._vectors(lines))],
                      numbers)
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
    raise ImportRefused(f"{target} is not a {'fact' if name != 'source_event' else 'event'} of scope "
                        f"{scope[0]}/{scope[1]}", line=_line_of(path, kind, row_id), field=name)


def _line_of(path, kind: str, row_id) -> int | None:
    """The line of a record, found again by scanning the file: only on the error path, to point at it."""
    needle = str(row_id).encode()
    for number, raw in _read(path, lambda n: None):
        if needle in raw:
            record = json.loads(raw)
            if record.get("type") == kind and record.get("id") == str(row_id):
                return number
    return None


def import_write(path, *, header: dict, skip_existing: bool, embedder: Embedder,
                 progress=lambda n: None) -> ImportReport:
    """Pass 2: scope by scope, one transaction and the scope's lock each."""
    report = ImportReport()
    identity = embedder.identity()
    writer = _Writer(embedder, keep_vectors=header.get("embedding") == identity, skip_existing=skip_existing,
                     report=report)
    _, lines = _lines(path, progress)
    for scope, scope_lines in groupby(lines, key=lambda line: line.scope):
        try:
            with transaction.atomic():
                _lock_scopes([scope])
                for kind, kind_lines in groupby(scope_lines, key=lambda line: line.kind):
                    for chunk in _chunked(kind_lines, CHUNK):
                        writer.write(kind, chunk)
                _check_references(path, scope)
        except ImportRefused as exc:
            exc.scopes_written, exc.scope = report.scopes, scope
            raise
        report.scopes += 1
    return report
