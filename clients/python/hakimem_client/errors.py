"""Typed exceptions built from the server's error contract:

    {"error": {"code": "<stable machine code>", "message": "...", "details": {...}}}

Catch `HakimemError` for everything, or a subclass for one kind of failure; `code` is the server's machine
code (`invalid_request`, `budget_exceeded`, `not_found`, ...), stable across releases.
"""

from __future__ import annotations

from typing import Any


class HakimemError(Exception):
    def __init__(self, code: str, message: str, *, status: int | None = None, details: dict[str, Any] | None = None):
        super().__init__(f"{code}: {message}" if status is None else f"{status} {code}: {message}")
        self.code = code
        self.message = message
        self.status = status
        self.details = details or {}


class InvalidRequestError(HakimemError):
    """400: the request was refused as it stands (invalid_request, budget_exceeded); nothing was written.
    `details["errors"]` lists {index, field, message} for validation errors."""


class UnauthenticatedError(HakimemError):
    """401: no key, or an unknown or revoked one."""


class PermissionDeniedError(HakimemError):
    """403."""


class NotFoundError(HakimemError):
    """404: no such object, or one in another project than the key's (the server does not tell which)."""


class ConflictStateError(HakimemError):
    """409: the object is not in a state that allows this (conflict_not_open, fact_not_active)."""


class RateLimitedError(HakimemError):
    """429, still refused after the retries; `retry_after` is the server's last Retry-After, in seconds."""

    def __init__(self, *args, retry_after: float | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.retry_after = retry_after


class UnavailableError(HakimemError):
    """503 (embedder_unavailable, database_unavailable, ...), still refused after the retries, or the server
    could not be reached at all (code `connection_error`, status None)."""

    def __init__(self, *args, retry_after: float | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.retry_after = retry_after


class ServerError(HakimemError):
    """Any other 5xx (internal_error)."""


_BY_STATUS: dict[int, type[HakimemError]] = {
    400: InvalidRequestError,
    401: UnauthenticatedError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictStateError,
    429: RateLimitedError,
    503: UnavailableError,
}


def error_from_response(status: int, body: Any, *, retry_after: float | None = None) -> HakimemError:
    """The exception for an error answer. A body outside the contract (a proxy's HTML page) still gives an
    exception of the right class, with code `unexpected_response`."""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("code"), str):
        code, message = error["code"], str(error.get("message", ""))
        details = error.get("details") if isinstance(error.get("details"), dict) else {}
    else:
        code, message, details = "unexpected_response", f"HTTP {status} without the error contract's body", {}
    cls = _BY_STATUS.get(status) or (ServerError if status >= 500 else HakimemError)
    kwargs: dict[str, Any] = {"status": status, "details": details}
    if cls in (RateLimitedError, UnavailableError):
        kwargs["retry_after"] = retry_after
    return cls(code, message, **kwargs)
