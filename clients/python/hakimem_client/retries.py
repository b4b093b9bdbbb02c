"""The retry policy Client and AsyncClient share: an answer 429 or 503 is retried after the server's `Retry-After`
(seconds or an HTTP date), or else after an exponential backoff with jitter, at most `max_retries` times; a
`Retry-After` longer than `max_backoff` is not waited for (the error is raised at once, carrying `retry_after`).
Both statuses mean the server did nothing (throttled before the view; a 503 write answers "nothing was written"), so
every call may be retried on them. A connection that could not be opened is retried for every call too (the request
never left); a connection lost after the request was sent only for calls that are safe to repeat (reads, deletes,
context), since a write may have been applied.
"""

from __future__ import annotations

import random
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING

import httpx

from hakimem_client.errors import HakimemError, UnavailableError

if TYPE_CHECKING:
    from hakimem_client.endpoints import _Call

RETRY_STATUSES = frozenset({429, 503})


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header: a number of seconds, or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


class _RetryPolicy:
    def __init__(self, max_retries: int, backoff: float, max_backoff: float):
        self.max_retries = max(0, max_retries)
        self.backoff = backoff
        self.max_backoff = max_backoff

    def _backoff(self, attempt: int) -> float:
        ceiling = min(self.max_backoff, self.backoff * (2**attempt))
        return ceiling / 2 + random.uniform(0, ceiling / 2)

    def delay_for_response(self, attempt: int, response: httpx.Response) -> float | None:
        """Seconds to wait before the next attempt, or None to give up and raise."""
        if response.status_code not in RETRY_STATUSES or attempt >= self.max_retries:
            return None
        retry_after = parse_retry_after(response.headers.get("Retry-After"))
        if retry_after is None:
            return self._backoff(attempt)
        return retry_after if retry_after <= self.max_backoff else None

    def delay_for_error(self, attempt: int, exc: httpx.TransportError, call: _Call) -> float | None:
        if attempt >= self.max_retries:
            return None
        never_sent = isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout)
        return self._backoff(attempt) if never_sent or call.idempotent else None


def _connection_error(exc: httpx.TransportError) -> HakimemError:
    return UnavailableError("connection_error", f"{type(exc).__name__}: {exc}", status=None)
