"""Serializer fields shared by every app's API: strict about types, so bad input is a 400 with a clear
message at the edge and never reaches the database."""

from __future__ import annotations

import json
import math
import re
from datetime import timezone as dt_timezone

from django.core.validators import RegexValidator
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from rest_framework import serializers

from hakimem.validators import SCOPE_ID_HELP, SCOPE_ID_MAX, is_scope_id


class ScopeIdField(serializers.CharField):
    def __init__(self, **kwargs):
        kwargs.setdefault("max_length", SCOPE_ID_MAX)
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if not isinstance(data, str):
            raise serializers.ValidationError("must be a string")
        if not is_scope_id(data):
            raise serializers.ValidationError(f"must be {SCOPE_ID_HELP}")
        return data


# A text holds something besides whitespace; a name or a title is one line of it. As validators of their fields (not
# validate_<field> methods) the OpenAPI schema states them as patterns, the very ones the API applies.
# Whitespace spelled out as Python's str.isspace() has it: a schema's \s (ECMA 262) leaves out U+001C-U+001F and
# U+0085 and adds U+FEFF, so a client validating by the schema would disagree with the API on those.
WHITESPACE = r"\t\n\x0b\x0c\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
NOT_BLANK = RegexValidator(rf"[^{WHITESPACE}]", "must contain non-whitespace text")
ONE_LINE = RegexValidator(
    rf"^[^\x00-\x1f\x7f]*[^{WHITESPACE}\x00-\x1f\x7f][^\x00-\x1f\x7f]*\Z",
    "must be one line of text, without control characters",
)


class StrictCharField(serializers.CharField):
    """Refuses numbers and booleans instead of turning them into text."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            raise serializers.ValidationError("must be a string")
        return super().to_internal_value(data)


class AwareDateTimeField(serializers.DateTimeField):
    """ISO 8601 with an explicit offset; stored as UTC. A time without an offset is ambiguous and refused."""

    def to_internal_value(self, value):
        if not isinstance(value, str):
            raise serializers.ValidationError("must be an ISO 8601 string such as 2026-05-01T10:00:00Z")
        try:
            parsed = parse_datetime(value)
        except ValueError:
            parsed = None
        if parsed is None:
            raise serializers.ValidationError("must be an ISO 8601 date-time such as 2026-05-01T10:00:00Z")
        if timezone.is_naive(parsed):
            raise serializers.ValidationError(
                "must include a UTC offset (Z or +02:00): a time without one is ambiguous"
            )
        try:
            return parsed.astimezone(dt_timezone.utc)
        except OverflowError:  # 9999-12-31T23:30:00-01:00 is in year 10000 once in UTC
            raise serializers.ValidationError("must be a moment between years 1 and 9999 once in UTC") from None


class StrictFloatField(serializers.FloatField):
    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int | float):
            raise serializers.ValidationError("must be a number")
        if isinstance(data, float) and not math.isfinite(data):
            raise serializers.ValidationError("must be a finite number")
        return super().to_internal_value(data)


METADATA_MAX_BYTES = 16384  # as compact JSON with non-ASCII escaped: what json.dumps(m, separators=(",", ":")) writes
METADATA_MAX_DEPTH = 32  # {"a": 1} is depth 1; each object or list inside adds one


def storable_text(value: str) -> bool:
    """PostgreSQL's text and jsonb cannot hold U+0000, and UTF-8 cannot encode a lone surrogate (\\ud800)."""
    return "\x00" not in value and not _SURROGATE_RE.search(value)


_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def metadata_problem(data) -> str | None:
    """Why `data` is not acceptable metadata, or None. Walks iteratively: a deep value cannot exhaust the stack."""
    if not isinstance(data, dict):
        return "must be a JSON object"
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > METADATA_MAX_DEPTH:
            return f"must be nested at most {METADATA_MAX_DEPTH} levels deep"
        if isinstance(value, dict):
            for key, item in value.items():
                if not storable_text(key):
                    return "must not contain U+0000 or an unpaired surrogate"
                if isinstance(item, dict | list):
                    stack.append((item, depth + 1))
                elif isinstance(item, str) and not storable_text(item):
                    return "must not contain U+0000 or an unpaired surrogate"
        else:
            for item in value:
                if isinstance(item, dict | list):
                    stack.append((item, depth + 1))
                elif isinstance(item, str) and not storable_text(item):
                    return "must not contain U+0000 or an unpaired surrogate"
    if len(json.dumps(data, separators=(",", ":"))) > METADATA_MAX_BYTES:
        return f"must be at most {METADATA_MAX_BYTES} bytes as compact JSON (non-ASCII written as \\u escapes)"
    return None


class JsonObjectField(serializers.JSONField):
    """A free-form JSON object (metadata), bounded: at most METADATA_MAX_DEPTH levels, METADATA_MAX_BYTES, and only
    text PostgreSQL can store."""

    MAX_BYTES = METADATA_MAX_BYTES

    def to_internal_value(self, data):
        problem = metadata_problem(data)
        if problem:
            raise serializers.ValidationError(problem)
        return data


def flatten_errors(detail, index=None, prefix="") -> list[dict]:
    """DRF's nested error dicts as a flat list of {index, field, message}, the shape clients can act on."""
    out = []
    if isinstance(detail, dict):
        for key, value in detail.items():
            name = f"{prefix}.{key}" if prefix else str(key)
            if key == "non_field_errors":
                name = prefix or None
            out.extend(flatten_errors(value, index, name))
    elif isinstance(detail, list):
        for item in detail:
            out.extend(flatten_errors(item, index, prefix))
    else:
        out.append({"index": index, "field": prefix or None, "message": str(detail)})
    return out


class StrictIntegerField(serializers.IntegerField):
    """A JSON integer: strings ("12"), floats (12.0) and booleans are refused, not coerced."""

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
            raise serializers.ValidationError("must be an integer")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    """true or false only: "yes", 1 and "false" (a string) are refused rather than guessed."""

    def to_internal_value(self, data):
        if not isinstance(data, bool):
            raise serializers.ValidationError("must be true or false")
        return data
