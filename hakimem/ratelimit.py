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

# One round trip: count this hit in the current window, and read another bucket's hits in it (an address's failed
# keys). A new window's first hit drops the bucket's older windows; `prune` also drops every bucket's windows older
# than `stale_before` (keys invented once leave one row each, never hit again).
_HIT_SQL = f"""
WITH old AS (
    DELETE FROM {RateCounter._meta.db_table}
     WHERE (bucket = %(bucket)s AND "window" < %(window)s) OR (%(prune)s AND "window" < %(stale_before)s)
), hit AS (
    INSERT INTO {RateCounter._meta.db_table} AS c (bucket, "window", hits) VALUES (%(bucket)s, %(window)s, 1)
    ON CONFLICT (bucket, "window") DO UPDATE SET hits = c.hits + 1
    RETURNING hits
)
SELECT (SELECT hits FROM hit),
       coalesce((SELECT hits FROM {RateCounter._meta.db_table} WHERE bucket = %(also)s AND "window" = %(window)s), 0)
"""
_PEEK_SQL = f'SELECT hits FROM {RateCounter._meta.db_table} WHERE bucket = %(bucket)s AND "window" = %(window)s'

# How often a process drops the counters of windows that are over, every bucket's, with one of its counted hits.
PRUNE_SECONDS = 60.0
_pruned_at = {"at": -1e9}


def _window(period: int, now: float) -> tuple[int, float]:
    start = int(now // period) * period
    return start, start + period - now


def counter_hit(bucket: str, period: int, *, now: float | None = None, also: str = "") -> tuple[int, float, int]:
    """Counts one hit of `bucket`; returns the hits of the current window, the seconds left in it and the hits of
    bucket `also` in the same window (0 without one)."""
    now = time.time() if now is None else now
    window, left = _window(period, now)
    prune = time.monotonic() - _pruned_at["at"] > PRUNE_SECONDS
    # Every window older than the longest period in use is over, whichever bucket it counted.
    longest = max(
        period,
        settings.HAKI_LOGIN_LOCKOUT_SECONDS,
        settings.HAKI_THROTTLE_RATE.period if settings.HAKI_THROTTLE_RATE else 0,
    )
    with connection.cursor() as cursor:
        cursor.execute(
            _HIT_SQL,
            {"bucket": bucket, "window": window, "also": also, "prune": prune, "stale_before": int(now) - longest},
        )
        hits, also_hits = cursor.fetchone()
    if prune:
        _pruned_at["at"] = time.monotonic()
    return hits, left, also_hits


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
    key); beyond it 429 rate_limited with Retry-After, before any other work. A key nobody holds would get a
    budget of its own each time it is invented: an address's unknown (or revoked) keys count against one budget
    of that address too, and an address beyond it is refused whatever key it sends, until the window ends."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        rate = settings.HAKI_THROTTLE_RATE
        path = request.path_info
        if rate is None or not path.startswith("/v1/") or path.startswith(_UNLIMITED_PREFIXES):
            return self.get_response(request)
        scheme, _, raw = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
        keyed = scheme == "Bearer" and raw.strip()
        failures = f"api-addr-unknown-keys:{client_address(request)}"
        bucket = f"api-key:{key_bucket(raw.strip())}" if keyed else f"api-addr:{client_address(request)}"
        from hakimem.errors import DATABASE_DOWN, database_unavailable_response

        try:
            hits, left, failed = counter_hit(bucket, rate.period, also=failures if keyed else "")
        except DATABASE_DOWN as exc:  # every /v1/ request counted here needs the database: no second wait for it
            return database_unavailable_response(exc)
        except DatabaseError:  # the counter alone failed: the request goes on uncounted
            return self.get_response(request)
        if hits > rate.limit or failed >= rate.limit:
            from hakimem.errors import ErrorCode, error_body

            retry_after = max(1, math.ceil(left))
            response = JsonResponse(
                error_body(
                    ErrorCode.RATE_LIMITED,
                    f"Too many requests: at most {rate.limit} per {rate.period} s "
                    f"for {'this key' if hits > rate.limit else 'unknown keys from this address'}. "
                    f"Retry after {retry_after} s.",
                    {"limit": rate.limit, "period_seconds": rate.period, "retry_after": retry_after},
                ),
                status=429,
            )
            response["Retry-After"] = str(retry_after)
            return response
        response = self.get_response(request)
        if keyed and response.status_code == 401:
            try:
                counter_hit(failures, rate.period)
            except DatabaseError:  # the 401 stands; only its count is lost
                pass
        return response


# --- the admin's sign-in ------------------------------------------------------------------------------------

# A username's failures from every address together lock it out at this many times the limit: a bound on guessing
# spread over many addresses, far above what one address may try (so no one address can lock a person out).
LOGIN_BACKSTOP_FACTOR = 20


def _login_buckets(request, username: str) -> list[tuple[str, int]]:
    """(bucket, allowed failures): per username and address, per address (several people may share one, so
    more), and per username from every address (the backstop). The first is the one a sign-in forgives."""
    name = hashlib.sha256(username.strip().lower().encode()).hexdigest()[:32]
    address = client_address(request)
    limit = settings.HAKI_LOGIN_MAX_FAILURES
    return [
        (f"login-user-addr:{name}:{address}", limit),
        (f"login-addr:{address}", limit * 4),
        (f"login-user:{name}", limit * LOGIN_BACKSTOP_FACTOR),
    ]


def login_locked(request, username: str) -> float:
    """Seconds until `username` may try again from this address; 0 when it may now."""
    if not settings.HAKI_LOGIN_MAX_FAILURES:
        return 0.0
    period = settings.HAKI_LOGIN_LOCKOUT_SECONDS
    for bucket, limit in _login_buckets(request, username):
        hits, left = counter_peek(bucket, period)
        if hits >= limit:
            return left
    return 0.0


def login_failed(sender, credentials, request=None, **kwargs) -> None:
    """user_login_failed: count the failure against the username from this address, the address, the username."""
    if request is None or not settings.HAKI_LOGIN_MAX_FAILURES:
        return
    for bucket, _ in _login_buckets(request, credentials.get("username", "")):
        counter_hit(bucket, settings.HAKI_LOGIN_LOCKOUT_SECONDS)


def login_succeeded(sender, request, user, **kwargs) -> None:
    """user_logged_in: the username's failures from this address are forgiven (the address's and the backstop's
    are not)."""
    counter_clear(_login_buckets(request, user.get_username())[0][0])


class LockoutAdminAuthenticationForm(AdminAuthenticationForm):
    """The admin's sign-in form, refusing every password, the right one too, while the username is locked out
    from this address (or the address, or the username everywhere) after too many failures. The password is
    checked all the same, so a locked answer takes as long as any other: its timing tells nothing."""

    error_messages = {
        **AdminAuthenticationForm.error_messages,
        "locked_out": "Too many failed sign-ins. Try again in %(minutes)d minutes.",
    }

    def clean(self):
        username = self.cleaned_data.get("username") or ""
        left = login_locked(self.request, username)
        try:
            cleaned = super().clean()
        except forms.ValidationError:
            if not left:
                raise
            cleaned = None
        if left:
            raise forms.ValidationError(
                self.error_messages["locked_out"], code="locked_out", params={"minutes": max(1, math.ceil(left / 60))}
            )
        return cleaned
