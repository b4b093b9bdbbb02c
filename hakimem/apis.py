import time
import weakref

from django.conf import settings
from django.db import connection
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from hakimem.embeddings import CircuitBreaker, EmbedderUnavailable, get_embedder
from hakimem.errors import (
    DATABASE_DOWN,
    database_answered,
    database_failed,
    database_known_down,
)

# A remote embedder is asked at most this often by readiness probes (a success is remembered, a failure not).
EMBEDDER_CHECK_SECONDS = 30.0
_embedder_ok_at: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _database() -> tuple[str, str | None]:
    """("ok", pgvector's version) when the database answers, ("unreachable", None) when it does not."""
    if database_known_down():  # found gone moments ago: a probe does not tie up the worker waiting for it again
        return "unreachable", None
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cursor.fetchone()
    except Exception as exc:  # health must answer even when the database does not
        if isinstance(exc, DATABASE_DOWN):
            database_failed(exc)
        return "unreachable", None
    database_answered()  # the API's requests need not wait out the outage's Retry-After any longer
    return "ok", (row[0] if row else None)


def _embedder() -> str:
    """ "ok" when the configured embedder turns a text into a vector of HAKI_EMBED_DIM, else "unavailable".
    While its circuit is open the probe does not ask it (the answer is at once "unavailable"); after the
    cool-down the probe may be the trial call that closes it again."""
    try:
        embedder = get_embedder()
        if embedder.breaker.state == CircuitBreaker.OPEN:  # however recent the last success
            return "unavailable"
        checked = _embedder_ok_at.get(embedder)
        if checked is None or time.monotonic() - checked > EMBEDDER_CHECK_SECONDS:
            embedder.embed(["readiness probe"])  # checks the dimension too
            _embedder_ok_at[embedder] = time.monotonic()
        return "ok"
    except EmbedderUnavailable:
        return "unavailable"


_HEALTH = inline_serializer(
    "Health",
    {
        "status": serializers.CharField(),
        "database": serializers.CharField(),
        "vector_extension": serializers.CharField(allow_null=True),
        "embedder": serializers.CharField(),
        "embed_dim": serializers.IntegerField(),
    },
)
_READINESS = inline_serializer(
    "Readiness",
    {
        "status": serializers.CharField(),
        "database": serializers.CharField(),
        "vector_extension": serializers.CharField(allow_null=True),
        "embedder": serializers.CharField(),
        "embedder_status": serializers.CharField(),
        "embed_dim": serializers.IntegerField(),
    },
)


def _circuit() -> str:
    """The embedder's circuit breaker in this process: closed, open or half_open."""
    try:
        return get_embedder().breaker.state
    except EmbedderUnavailable:  # not even configured
        return "open"


class _OpenProbe(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]


class HealthApi(_OpenProbe):
    """No auth: the database answers, the vector extension is there, which embedder is configured."""

    @extend_schema(summary="Health (no key)", responses={200: _HEALTH, 503: _HEALTH})
    def get(self, request):
        database, vector = _database()
        healthy = database == "ok" and vector is not None
        return Response(
            {
                "status": "ok" if healthy else "unhealthy",
                "database": database,
                "vector_extension": vector,
                "embedder": settings.HAKI_EMBED_PROVIDER,
                "embed_dim": settings.HAKI_EMBED_DIM,
            },
            status=200 if healthy else 503,
        )


class LivenessApi(_OpenProbe):
    """GET /v1/health/live: the process answers requests. Touches nothing else, so a database or embedder
    outage never gets a healthy process restarted (that is readiness' business)."""

    @extend_schema(
        summary="Liveness (no key)", responses={200: inline_serializer("Liveness", {"status": serializers.CharField()})}
    )
    def get(self, request):
        return Response({"status": "ok"})


class ReadinessApi(_OpenProbe):
    """GET /v1/health/ready: this process can serve a context call now: the database answers with the vector
    extension, and the embedder makes vectors of the configured size. 503 otherwise, saying which is not."""

    @extend_schema(summary="Readiness (no key)", responses={200: _READINESS, 503: _READINESS})
    def get(self, request):
        database, vector = _database()
        embedder = _embedder()
        ready = database == "ok" and vector is not None and embedder == "ok"
        return Response(
            {
                "status": "ready" if ready else "not_ready",
                "database": database,
                "vector_extension": vector,
                "embedder": settings.HAKI_EMBED_PROVIDER,
                "embedder_status": embedder,
                "embedder_circuit": _circuit(),
                "embed_dim": settings.HAKI_EMBED_DIM,
            },
            status=200 if ready else 503,
        )
