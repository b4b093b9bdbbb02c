"""The file export_scope writes and import_jsonl reads (format "hakimem-jsonl", version 1), and how each of its
lines is read and checked.

A header line, then one record per line, grouped by scope (subject), each scope's events first, then its facts,
its conflict sets with their members, its identity blocks and its procedures. A project's export also carries
the project-wide identity blocks and procedures, as the scope of subject_id "" (first: "" sorts before every
subject); a subject's export carries only the subject's own.

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

A record is not the API's output of the same row (facts/serializers.py), on purpose: the file restores rows as
stored (the raw similarity, "" for project-wide, a conflict set's member rows, timestamps with their offset), leaves
out what the API adds (an event's extraction state, a block's token estimate), and version 1 is a contract of its
own that old files keep.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from itertools import islice

from django.core.exceptions import ValidationError

from facts.models import (
    CATEGORY_MAX,
    EVENT_TEXT_MAX,
    FACT_TEXT_MAX,
    IDENTITY_NAME_MAX,
    IDENTITY_TEXT_MAX,
    PROCEDURE_TEXT_MAX,
    PROCEDURE_TITLE_MAX,
    RESOLVED_BY_MAX,
    SIGNAL_DETAIL_MAX,
    ConflictStatus,
    FactKind,
    FactStatus,
    ProcedureStatus,
    Volatility,
    validate_scope_id_or_project_wide,
)
from facts.identity_and_procedure_serializers import POSITION_MAX
from hakimem.embeddings import vector_literal
from hakimem.validators import validate_scope_id

FORMAT = "hakimem-jsonl"
VERSION = 1
EXPORTER = "hakimem manage.py export_scope"
CHUNK = 1000  # rows per server-side fetch, per existence check and per COPY

EVENT_FIELDS = ("id", "project_id", "subject_id", "text", "occurred_at", "recorded_at", "metadata")
FACT_FIELDS = (
    "id",
    "project_id",
    "subject_id",
    "text",
    "status",
    "category",
    "kind",
    "importance",
    "volatility",
    "valid_from",
    "valid_to",
    "recorded_from",
    "recorded_to",
    "last_confirmed_at",
    "superseded_by",
    "source_event",
    "metadata",
)
CONFLICT_FIELDS = (
    "id",
    "project_id",
    "subject_id",
    "status",
    "signal",
    "signal_detail",
    "similarity",
    "opened_at",
    "resolved_at",
    "resolved_by",
    "note",
    "reading",
)
IDENTITY_BLOCK_FIELDS = (
    "id",
    "project_id",
    "subject_id",
    "name",
    "text",
    "position",
    "enabled",
    "metadata",
    "created_at",
    "updated_at",
)
PROCEDURE_FIELDS = (
    "id",
    "project_id",
    "subject_id",
    "title",
    "text",
    "category",
    "importance",
    "status",
    "metadata",
    "created_at",
    "updated_at",
)
# The column behind each exported name, where they differ.
COLUMN = {"superseded_by": "superseded_by_id", "source_event": "source_event_id"}


def chunked(iterable: Iterable, size: int) -> Iterator[list]:
    iterator = iter(iterable)
    while chunk := list(islice(iterator, size)):
        yield chunk


def dumps(record: dict) -> str:
    return json.dumps(record, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


# --- reading and checking lines -----------------------------------------------------------------------------


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
        **_SCOPE,
        "text": (_text(EVENT_TEXT_MAX), _REQUIRED),
        "occurred_at": (_when, _REQUIRED),
        "recorded_at": (_when, _REQUIRED),
        "metadata": (_object, _REQUIRED),
        "embedding": (_nullable(_embedding), _OPTIONAL),
    },
    "fact": {
        **_SCOPE,
        "text": (_text(FACT_TEXT_MAX), _REQUIRED),
        "status": (_choice(FactStatus.values), _REQUIRED),
        "category": (_short(CATEGORY_MAX), _REQUIRED),
        "kind": (_choice(FactKind.values), _REQUIRED),
        "importance": (_unit, _REQUIRED),
        "volatility": (_choice(Volatility.values), _REQUIRED),
        "valid_from": (_nullable(_when), _REQUIRED),
        "valid_to": (_nullable(_when), _REQUIRED),
        "recorded_from": (_when, _REQUIRED),
        "recorded_to": (_nullable(_when), _REQUIRED),
        "last_confirmed_at": (_when, _REQUIRED),
        "superseded_by": (_nullable(_uuid), _REQUIRED),
        "source_event": (_nullable(_uuid), _REQUIRED),
        "metadata": (_object, _REQUIRED),
        "embedding": (_nullable(_embedding), _OPTIONAL),
    },
    "conflict_set": {
        **_SCOPE,
        "status": (_choice(ConflictStatus.values), _REQUIRED),
        "signal": (_text(32), _REQUIRED),
        "signal_detail": (_short(SIGNAL_DETAIL_MAX), _REQUIRED),
        "similarity": (_number, _REQUIRED),
        "opened_at": (_when, _REQUIRED),
        "resolved_at": (_nullable(_when), _REQUIRED),
        "resolved_by": (_short(RESOLVED_BY_MAX), _REQUIRED),
        "note": (_str, _REQUIRED),
        "reading": (_object, _OPTIONAL),  # absent from exports written before sets kept what was read
        "members": (lambda value: value, _REQUIRED),  # checked by _members, each member with its own field name
    },
    "identity_block": {
        **_SCOPE_OR_PROJECT,
        "name": (_text(IDENTITY_NAME_MAX), _REQUIRED),
        "text": (_text(IDENTITY_TEXT_MAX), _REQUIRED),
        "position": (_position, _REQUIRED),
        "enabled": (_boolean, _REQUIRED),
        "metadata": (_object, _REQUIRED),
        "created_at": (_when, _REQUIRED),
        "updated_at": (_when, _REQUIRED),
    },
    "procedure": {
        **_SCOPE_OR_PROJECT,
        "title": (_text(PROCEDURE_TITLE_MAX), _REQUIRED),
        "text": (_text(PROCEDURE_TEXT_MAX), _REQUIRED),
        "category": (_short(CATEGORY_MAX), _REQUIRED),
        "importance": (_unit, _REQUIRED),
        "status": (_choice(ProcedureStatus.values), _REQUIRED),
        "metadata": (_object, _REQUIRED),
        "created_at": (_when, _REQUIRED),
        "updated_at": (_when, _REQUIRED),
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
        raise ImportRefused('the first line must be the header ({"type": "header", ...})', line=number, field="type")
    if header.get("format") != FORMAT:
        raise ImportRefused(f"must be {FORMAT!r}", line=number, field="format")
    if header.get("version") != VERSION:
        raise ImportRefused(
            f"version {header.get('version')!r} is not supported (this hakimem reads {VERSION})",
            line=number,
            field="version",
        )
    embedding = header.get("embedding")
    if not isinstance(embedding, dict):
        raise ImportRefused("must be an object with provider, model, dimension", line=number, field="embedding")
    counts = header.get("counts")
    if counts is not None and not (
        isinstance(counts, dict)
        and all(isinstance(counts.get(k), int) for k in ("events", "facts", "conflict_sets"))
        and all(isinstance(counts.get(k, 0), int) for k in ("identity_blocks", "procedures"))
    ):
        raise ImportRefused(
            "must hold events, facts and conflict_sets (and identity_blocks, procedures, if given) as integers",
            line=number,
            field="counts",
        )
    return header


def raw_lines(path, progress) -> Iterator[tuple[int, bytes]]:
    """The file's non-blank lines with their numbers; advances `progress` by bytes."""
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            progress(len(raw))
            if raw.strip():
                yield number, raw


def read_file(path, progress) -> tuple[dict, Iterator[Line]]:
    lines = raw_lines(path, progress)
    first = next(lines, None)
    if first is None:
        raise ImportRefused("the file is empty")
    header = _header(*first)
    return header, (_parse(number, raw) for number, raw in lines)
