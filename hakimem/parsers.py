"""The one JSON parser of /v1/: strict about what JSON may carry, and bounded in size.

DRF's JSONParser reads the request stream itself, so Django's DATA_UPLOAD_MAX_MEMORY_SIZE (checked only when
`request.body` is read) never applied: a body of any size was read into memory. This one reads at most the
limit and answers 413 beyond it. It also refuses what json.loads accepts but nothing downstream can hold: numbers
that overflow a float or a bigint (1e400 became inf, which the renderer then could not write back: Django's HTML 500 page),
NaN and Infinity, and nesting deep enough to exhaust the decoder's recursion (2,000 levels).
"""

from __future__ import annotations

import json
import math

from django.conf import settings
from rest_framework import exceptions, status
from rest_framework.parsers import JSONParser


class PayloadTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The request body is too large."
    default_code = "payload_too_large"

    def __init__(self, limit: int):
        super().__init__(f"The request body is larger than {limit} bytes; nothing was written.")
        self.limit = limit


def max_body_bytes() -> int:
    return settings.DATA_UPLOAD_MAX_MEMORY_SIZE


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number out of range: {text[:40]}")
    return value


# The largest integer any column holds (bigint); a longer one is no count, budget or score a client meant.
_MAX_INT = 2**63 - 1


def _bounded_int(text: str) -> int:
    value = int(text)
    if abs(value) > _MAX_INT:
        raise ValueError(f"integer out of range: {text[:40]}")
    return value


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


class StrictJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        limit = max_body_bytes()
        request = (parser_context or {}).get("request")
        declared = request.META.get("CONTENT_LENGTH") if request is not None else None
        if declared and str(declared).isdigit() and int(declared) > limit:
            raise PayloadTooLarge(limit)
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise PayloadTooLarge(limit)
        try:
            text = raw.decode((parser_context or {}).get("encoding") or settings.DEFAULT_CHARSET)
        except UnicodeDecodeError as exc:
            raise exceptions.ParseError("JSON parse error - the body is not valid UTF-8.") from exc
        try:
            return json.loads(text, parse_float=_finite_float, parse_int=_bounded_int, parse_constant=_no_constant)
        except RecursionError as exc:
            raise exceptions.ParseError("JSON parse error - nested too deeply.") from exc
        except ValueError as exc:
            raise exceptions.ParseError(f"JSON parse error - {exc}") from exc
