"""The one error contract: every error a client sees is

    {"error": {"code": "<stable machine code>", "message": "<for humans>", "details": {...}}}

with the right HTTP status. Codes live in ErrorCode; views raise ApiError (or let DRF raise its own
exceptions, which the handler below maps onto the same shape).
"""

from __future__ import annotations

import enum
import logging
import math
import random
import sys
import threading
import time

import psycopg
from django.core.exceptions import RequestDataTooBig
from django.db import InterfaceError as DjangoInterfaceError
from django.db import OperationalError as DjangoOperationalError
from django.db import connection, transaction
from django.http import Http404, JsonResponse
from django.views import defaults
from rest_framework import exceptions, status
from rest_framework.response import Response

from hakimem.embeddings import EmbedderCircuitOpen, EmbedderUnavailable
from hakimem.parsers import PayloadTooLarge, max_body_bytes
from hakimem.validators import MalformedId

logger = logging.getLogger("hakimem.errors")


class ErrorCode(str, enum.Enum):
    INVALID_REQUEST = "invalid_request"
    UNAUTHENTICATED = "unauthenticated"
    PERMISSION_DENIED = "permission_denied"
    NOT_FOUND = "not_found"
    METHOD_NOT_ALLOWED = "method_not_allowed"
    UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type"
    BUDGET_EXCEEDED = "budget_exceeded"
    EMBEDDER_UNAVAILABLE = "embedder_unavailable"
    CONFLICT_NOT_OPEN = "conflict_not_open"
    FACT_NOT_ACTIVE = "fact_not_active"
    PROCEDURE_NOT_ACTIVE = "procedure_not_active"
    CONSENT_MISSING = "consent_missing"
    PAYLOAD_TOO_LARGE = "payload_too_large"
    RATE_LIMITED = "rate_limited"
    DATABASE_UNAVAILABLE = "database_unavailable"
    INTERNAL_ERROR = "internal_error"


class ApiError(Exception):
    def __init__(self, code: ErrorCode, message: str, *, status_code: int = 400, details: dict | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.status_code = status_code
        self.details = details or {}


def invalid(errors: list[dict], message="The request is invalid; see details.") -> ApiError:
    """400 invalid_request listing each problem as {index, field, message}."""
    return ApiError(ErrorCode.INVALID_REQUEST, message, details={"errors": errors})


def error_body(code: ErrorCode, message: str, details: dict | None = None) -> dict:
    return {"error": {"code": code.value, "message": message, "details": details or {}}}


_DRF_CODES = {
    exceptions.NotAuthenticated: (ErrorCode.UNAUTHENTICATED, status.HTTP_401_UNAUTHORIZED),
    exceptions.AuthenticationFailed: (ErrorCode.UNAUTHENTICATED, status.HTTP_401_UNAUTHORIZED),
    exceptions.PermissionDenied: (ErrorCode.PERMISSION_DENIED, status.HTTP_403_FORBIDDEN),
    exceptions.NotFound: (ErrorCode.NOT_FOUND, status.HTTP_404_NOT_FOUND),
    exceptions.MethodNotAllowed: (ErrorCode.METHOD_NOT_ALLOWED, status.HTTP_405_METHOD_NOT_ALLOWED),
    exceptions.UnsupportedMediaType: (ErrorCode.UNSUPPORTED_MEDIA_TYPE, status.HTTP_415_UNSUPPORTED_MEDIA_TYPE),
    exceptions.ParseError: (ErrorCode.INVALID_REQUEST, status.HTTP_400_BAD_REQUEST),
    exceptions.ValidationError: (ErrorCode.INVALID_REQUEST, status.HTTP_400_BAD_REQUEST),
}


# The database refused or dropped the connection, the pool found none in time (psycopg_pool.PoolTimeout is a
# psycopg.OperationalError), or the server is shutting down: nothing was written, and the same call may succeed
# once the database is back. Django closes a connection that failed this way at the end of the request, so the
# next request opens a new one: the process recovers without a restart.
DATABASE_DOWN = (DjangoOperationalError, DjangoInterfaceError, psycopg.OperationalError, psycopg.InterfaceError)


# After a request found the database gone, this process answers /v1/ requests 503 at once for up to this long (their
# Retry-After) instead of each waiting out the pool's timeout: a worker waits for the database once per window, and
# stays free for the probes and for the requests that need no database.
RETRY_AFTER_SECONDS = 5
_outage = {"until": 0.0, "seen": False}
_outage_check = threading.Lock()

# SQLSTATEs that say the connection is gone, not that one statement failed (a deadlock or a cancelled statement
# is an OperationalError too, and says nothing about the next request): connection exceptions (class 08), the
# server shutting down or starting (57P01-57P03).
_CONNECTION_GONE_STATES = ("57P01", "57P02", "57P03")


def connection_lost(exc: BaseException) -> bool:
    """Whether `exc` (one of DATABASE_DOWN) means this process cannot reach the database: no connection came (the
    pool's timeout, a refused connect), or the one it had was cut."""
    if not isinstance(exc, DATABASE_DOWN):  # a statement the database refused (ProgrammingError, ...)
        return False
    cause = exc.__cause__ if isinstance(exc, DjangoOperationalError | DjangoInterfaceError) else exc
    if isinstance(exc, DjangoInterfaceError) or isinstance(cause, psycopg.InterfaceError):
        return True
    state = getattr(cause, "sqlstate", None)
    return state is None or state.startswith("08") or state in _CONNECTION_GONE_STATES


def _outage_window() -> None:
    # Between half and all of Retry-After: the workers of a server all find the outage at once, and would otherwise
    # all ask the database again at once.
    _outage.update(until=time.monotonic() + RETRY_AFTER_SECONDS * random.uniform(0.5, 1.0), seen=True)


def database_failed(exc: BaseException) -> None:
    if connection_lost(exc):
        _outage_window()


def database_answered() -> None:
    _outage.update(until=0.0, seen=False)


def database_known_down() -> bool:
    """Whether the database was found gone and has not been seen back. Once a window is over, one connect of its own,
    outside the pool, says whether it answers again: the pool would make the request wait out its timeout (its
    reconnections back off), where a refused connect fails at once and a silent host after connect_timeout."""
    if time.monotonic() < _outage["until"]:
        return True
    if not _outage["seen"]:
        return False
    if not _outage_check.acquire(blocking=False):  # another thread of the process is asking
        return True
    try:
        psycopg.connect(**connection.get_connection_params(), autocommit=True).close()
    except psycopg.Error:
        _outage_window()
        return True
    else:
        database_answered()
        # The pool's own reconnection may be backing off for many seconds more: a new pool connects now. No thread
        # holds a working connection of the old one (they all failed).
        if connection.pool is not None:
            connection.close()
            connection.close_pool()
        return False
    finally:
        _outage_check.release()


def database_unavailable_response(exc: BaseException | None = None) -> JsonResponse:
    """503 database_unavailable with Retry-After, for what fails outside a DRF view (middleware, a commit)."""
    if exc is not None:
        logger.warning("database unavailable: %s", exc.__class__.__name__)
        database_failed(exc)
    response = JsonResponse(database_unavailable_body(), status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


class DatabaseOutageMiddleware:
    """While this process knows the database is gone (database_known_down), /v1/ requests that need it answer 503
    at once. The probes (readiness answers from the same knowledge) and the API's description pass."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        from hakimem.rowsecurity import UNSCOPED_PREFIXES

        path = request.path_info
        if path.startswith("/v1/") and not path.startswith(UNSCOPED_PREFIXES) and database_known_down():
            return database_unavailable_response()
        return self.get_response(request)


def payload_too_large_body() -> dict:
    limit = max_body_bytes()
    return error_body(
        ErrorCode.PAYLOAD_TOO_LARGE,
        f"The request body is larger than {limit} bytes; nothing was written.",
        {"max_bytes": limit},
    )


def database_unavailable_body() -> dict:
    return error_body(ErrorCode.DATABASE_UNAVAILABLE, "The database is unavailable; nothing was written. Retry later.")


def exception_handler(exc, context):
    # A refused request writes nothing: the request's transaction (hakimem/rowsecurity.py) is rolled back.
    if connection.in_atomic_block:
        transaction.set_rollback(True)
    if isinstance(exc, ApiError):
        return Response(error_body(exc.code, exc.message, exc.details), status=exc.status_code)
    if isinstance(exc, PayloadTooLarge | RequestDataTooBig):
        return Response(payload_too_large_body(), status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
    if isinstance(exc, DATABASE_DOWN):
        logger.warning("database unavailable: %s", exc.__class__.__name__)
        database_failed(exc)
        return Response(
            database_unavailable_body(),
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
            headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
        )
    if isinstance(exc, EmbedderUnavailable):
        logger.warning("embedder unavailable on a write: %s", exc)
        circuit_open = isinstance(exc, EmbedderCircuitOpen)
        response = Response(
            error_body(
                ErrorCode.EMBEDDER_UNAVAILABLE,
                f"The embedder is unavailable; nothing was written. ({exc})",
                {"circuit": "open"} if circuit_open else None,
            ),
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
        )
        if circuit_open:
            response["Retry-After"] = str(max(1, math.ceil(exc.retry_after)))
        return response
    if isinstance(exc, exceptions.Throttled):
        wait = max(1, math.ceil(exc.wait or 1))
        response = Response(
            error_body(ErrorCode.RATE_LIMITED, f"Too many requests. Retry after {wait} s.", {"retry_after": wait}),
            status=status.HTTP_429_TOO_MANY_REQUESTS,
        )
        response["Retry-After"] = str(wait)
        return response
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    for cls, (code, http_status) in _DRF_CODES.items():
        if isinstance(exc, cls):
            if isinstance(exc, exceptions.ValidationError):
                from hakimem.fields import flatten_errors

                exc = invalid(flatten_errors(exc.detail))
                return Response(error_body(exc.code, exc.message, exc.details), status=exc.status_code)
            response = Response(error_body(code, str(exc.detail)), status=http_status)
            if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
                response["WWW-Authenticate"] = 'Bearer realm="hakimem"'
            return response
    if isinstance(exc, exceptions.APIException):
        return Response(error_body(ErrorCode.INVALID_REQUEST, str(exc.detail)), status=exc.status_code)
    # Anything else is our bug: log it with its traceback (never the request body: it holds personal data)
    # and answer in the same shape rather than Django's HTML 500 page.
    logger.exception("unhandled error in %s", context.get("view").__class__.__name__ if context else "?")
    return Response(
        error_body(ErrorCode.INTERNAL_ERROR, "An internal error occurred."),
        status=status.HTTP_500_INTERNAL_SERVER_ERROR,
    )


# Django's own error views, for what fails before or outside a DRF view (an invalid Host header, a body read by
# middleware past DATA_UPLOAD_MAX_MEMORY_SIZE, an unknown URL, a crash in middleware). The API answers them in
# the contract; the admin and the stats pages keep Django's HTML pages.


def is_api(request) -> bool:
    return request.path_info.startswith("/v1/") or request.path_info == "/v1"


def not_found_view(request, exception=None):
    """Unknown /v1/ URLs answer the error contract, not an HTML page."""
    return JsonResponse(error_body(ErrorCode.NOT_FOUND, "No such endpoint."), status=404)


def bad_request_view(request, exception=None):
    if isinstance(exception, RequestDataTooBig):
        return JsonResponse(payload_too_large_body(), status=413)
    if not is_api(request):
        return defaults.bad_request(request, exception)
    if isinstance(exception, MalformedId):
        return JsonResponse(error_body(ErrorCode.INVALID_REQUEST, str(exception)), status=400)
    return JsonResponse(
        error_body(ErrorCode.INVALID_REQUEST, "Bad request (for instance an unknown Host header)."), status=400
    )


def permission_denied_view(request, exception=None):
    if not is_api(request):
        return defaults.permission_denied(request, exception)
    return JsonResponse(error_body(ErrorCode.PERMISSION_DENIED, "Permission denied."), status=403)


def server_error_view(request):
    # Django calls it inside the `except` of what was raised: the database lost in a middleware or at the request's
    # commit answers as it does in a view.
    exc = sys.exc_info()[1]
    if is_api(request) and isinstance(exc, DATABASE_DOWN):
        return database_unavailable_response(exc)
    if not is_api(request):
        return defaults.server_error(request)
    return JsonResponse(error_body(ErrorCode.INTERNAL_ERROR, "An internal error occurred."), status=500)
