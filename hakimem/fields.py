"""Serializer fields shared by every app's API: strict about types, so bad input is a 400 with a clear
message at the edge and never reaches the database."""
from __future__ import annotations

import json
from datetime import timezone as dt_timezone

from django.utils import timezone
from django.utils.dateparse import parse_datetime
from rest_framework import serializers

from hakimem.validators import SCOPE_ID_HELP, SCOPE_ID_MAX, SCOPE_ID_RE


class ScopeIdField(serializers.CharField):
    def __init__(self, **kwargs):
        kwargs.setdefault("max_length", SCOPE_ID_MAX)
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if not isinstance(data, str):
            raise serializers.ValidationError("must be a string")
        if not SCOPE_ID_RE.match(data):
            raise serializers.ValidationError(f"must be {SCOPE_ID_HELP}")
        return data


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
            raise serializers.ValidationError("must include a UTC offset (Z or +02:00): a time without one is ambiguous")
        return parsed.astimezone(dt_timezone.utc)


class StrictFloatField(serializers.FloatField):
    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int | float):
            raise serializers.ValidationError("must be a number")
        return super().to_internal_value(data)


class JsonObjectField(serializers.JSONField):
    MAX_BYTES = 16384

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            raise serializers.ValidationError("must be a JSON object")
        if len(json.dumps(data)) > self.MAX_BYTES:
            raise serializers.ValidationError(f"must be at most {self.MAX_BYTES} bytes of JSON")
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
