"""Limits: API requests per key (429 rate_limited), and the admin's sign-in lockout after failed passwords.

Counters live in PostgreSQL (RateCounter, an UNLOGGED table), so every gunicorn worker counts against the
same budget: one fixed window per bucket, one upsert per counted request. The API's counter runs before the
request's transaction (RateLimitMiddleware sits before RowSecurityMiddleware): inside it, the counter row's
lock would be held for the whole request and a key's concurrent requests would queue behind each other.
That is also why it is a middleware rather than a DRF throttle class (DRF throttles run after
authentication, inside the transaction): the key is identified by a hash of the bearer token, without reading
the key; not the hash ApiKey stores, which the counters' readers (the application's login role) must not learn.
"""
from __future__ import annotations

import hashlib
import math
import time

from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.db import DatabaseError, connection
from django.http import JsonResponse

from hakimem.models import RateCounter

# One round trip: count this hit in the current window (a new window's first hit also drops the bucket's
# older windows, so the table holds at most about one row per active bucket).
_HIT_SQL = f"""
WITH old AS (
    DELETE FROM {RateCounter._meta.db_table} WHERE bucket = %(bucket)s AND "window" < %(window)s
)
INSERT INTO {RateCounter._meta.db_table} AS c (bucket, "window", hits) VALUES (%(bucket)s, %(window)s, 1)
ON CONFLICT (bucket, "window") DO UPDATE SET hits = c.hits + 1
RETURNING hits
"""
_PEEK_SQL = f'SELECT hits FROM {RateCounter._meta.db_table} WHERE bucket = %(bucket)s AND "window" = %(window)s'


def _window(period: int, now: float) -> tuple[int, float]:
    start = int(now // period) * period
    return start, start + period - now


def counter_hit(bucket: str, period: int, *, now: float | None = None) -> tuple[int, float]:
    """Counts one hit of `bucket`; returns the hits of the current window and the seconds left in it."""
    window, left = _window(period, time.time() if now is None else now)
    with connection.cursor() as cursor:
        cursor.execute(_HIT_SQL, {"bucket": bucket, "window": window})
        return cursor.fetchone()[0], left


def counter_peek(bucket: str, period: int, *, now: float | None = None) -> tuple[int, float]:
    window, left = _window(period, time.time() if now is None else now)
    with connection.cursor() as cursor:
        cursor.execute(_PEEK_SQL, {"bucket": bucket, "window": window})
        row = cursor.fetchone()
    return (row[0] if row else 0), left


def counter_clear(bucket: str) -> None:
    RateCounter.objects.filter(bucket=bucket).delete()


def client_address(request) -> str:
    # Behind a proxy, set the proxy to pass the client's address as REMOTE_ADDR (gunicorn: forwarded_allow_ips).
    return request.META.get("REMOTE_ADDR") or "unknown"


# --- API requests -------------------------------------------------------------------------------------------

_UNLIMITED_PREFIXES = ("/v1/health", "/v1/schema")  # the probes, and the static description of the API


def key_bucket(raw: str) -> str:
    """A key's counter: a hash of its secret of its own, never the stored key_hash."""
    return hashlib.sha256(b"hakimem-rate\0" + raw.encode("utf-8")).hexdigest()[:32]


class RateLimitMiddleware:
    """At most HAKI_THROTTLE_RATE requests per API key on /v1/ (per client address for requests without a
    key); beyond it 429 rate_limited with Retry-After, before any other work."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        rate = settings.HAKI_THROTTLE_RATE
        path = request.path_info
        if rate is None or not path.startswith("/v1/") or path.startswith(_UNLIMITED_PREFIXES):
            return self.get_response(request)
        scheme, _, raw = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
        bucket = f"api-key:{key_bucket(raw.strip())}" if scheme == "Bearer" and raw.strip() else \
            f"api-addr:{client_address(request)}"
        try:
            hits, left = counter_hit(bucket, rate.period)
        except DatabaseError:  # no counting without the database: the request fails further on, in the contract
            return self.get_response(request)
        if hits > rate.limit:
            from hakimem.errors import ErrorCode, error_body

            retry_after = max(1, math.ceil(left))
            response = JsonResponse(
                error_body(ErrorCode.RATE_LIMITED, f"Too many requests: at most {rate.limit} per {rate.period} s "
                           f"for this key. Retry after {retry_after} s.",
                           {"limit": rate.limit, "period_seconds": rate.period, "retry_after": retry_after}),
                status=429,
            )
            response["Retry-After"] = str(retry_after)
            return response
        return self.get_response(request)


# --- the admin's sign-in ------------------------------------------------------------------------------------

def _login_buckets(request, username: str) -> list[tuple[str, int]]:
    """(bucket, allowed failures): per username, and per address (several people may share one, so more)."""
    name = hashlib.sha256(username.strip().lower().encode()).hexdigest()[:32]
    limit = settings.HAKI_LOGIN_MAX_FAILURES
    return [(f"login-user:{name}", limit), (f"login-addr:{client_address(request)}", limit * 4)]


def login_locked(request, username: str) -> float:
    """Seconds until `username` (or this address) may try again; 0 when it may now."""
    if not settings.HAKI_LOGIN_MAX_FAILURES:
        return 0.0
    period = settings.HAKI_LOGIN_LOCKOUT_SECONDS
    for bucket, limit in _login_buckets(request, username):
        hits, left = counter_peek(bucket, period)
        if hits >= limit:
            return left
    return 0.0


def login_failed(sender, credentials, request=None, **kwargs) -> None:
    """user_login_failed: count the failure against the username and the address."""
    if request is None or not settings.HAKI_LOGIN_MAX_FAILURES:
        return
    for bucket, _ in _login_buckets(request, credentials.get("username", "")):
        counter_hit(bucket, settings.HAKI_LOGIN_LOCKOUT_SECONDS)


def login_succeeded(sender, request, user, **kwargs) -> None:
    """user_logged_in: the username's failures are forgiven (the address's are not)."""
    counter_clear(_login_buckets(request, user.get_username())[0][0])


class LockoutAdminAuthenticationForm(AdminAuthenticationForm):
    """The admin's sign-in form, refusing every password, the right one too, while the username or the address
    is locked out after too many failures."""

    error_messages = {
        **AdminAuthenticationForm.error_messages,
        "locked_out": "Too many failed sign-ins. Try again in %(minutes)d minutes.",
    }

    def clean(self):
        username = self.cleaned_data.get("username") or ""
        left = login_locked(self.request, username)
        if left:
            raise forms.ValidationError(self.error_messages["locked_out"], code="locked_out",
                                        params={"minutes": max(1, math.ceil(left / 60))})
        return super().clean()
