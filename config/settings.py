"""hakimem settings: everything comes from the environment, with defaults that make `make run` work.

DATABASE_URL unset means the embedded PostgreSQL in HAKI_PGDATA (default var/pgdata). The product's own
knobs are HAKI_*; docs/operating.md documents each.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from hakimem.csp import DEFAULT_POLICY
from hakimem.dbserver import database_settings, replica_settings, start_embedded
from hakimem.rates import parse_rate

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    return default if value is None else value.strip().lower() in ("1", "true", "yes", "on")


def env_float(name: str, default: float | None) -> float | None:
    value = os.environ.get(name)
    return default if value in (None, "") else float(value)


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    return default if value in (None, "") else int(value)


def _secret_key() -> str:
    """Production sets DJANGO_SECRET_KEY; a checkout gets its own random development key, never committed."""
    if os.environ.get("DJANGO_SECRET_KEY"):
        return os.environ["DJANGO_SECRET_KEY"]
    path = VAR_DIR / "secret_key"
    if not path.exists():
        VAR_DIR.mkdir(parents=True, exist_ok=True)
        # created readable by its owner only, never for an instant by anyone else
        with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as file:
            file.write(secrets.token_urlsafe(50))
    return path.read_text().strip()


SECRET_KEY = _secret_key()
DEBUG = env_bool("HAKI_DEBUG", False)
ALLOWED_HOSTS = [h for h in os.environ.get("HAKI_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",") if h]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's files, served locally for /docs
    "procrastinate.contrib.django",  # the PostgreSQL task queue of fact extraction (ingest/tasks.py)
    "hakimem",
    "facts",
    "ingest",
    "traces",
    "portability",
    "context",
    "stats",
    "privacy",
    "integrations",
]

MIDDLEWARE = [
    "hakimem.observability.MetricsMiddleware",  # first: it times everything below it
    # Before any view or filter passes a U+0000 of the path or the query string on to a query.
    "hakimem.guard.RequestGuardMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "hakimem.csp.ContentSecurityPolicyMiddleware",  # HAKI_CSP
    # Static files (the admin's and the stats pages' CSS) from STATIC_ROOT, filled by collectstatic at `make run`.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # /v1/ requests answered 503 at once while this process knows the database is gone (hakimem/errors.py).
    "hakimem.errors.DatabaseOutageMiddleware",
    # /v1/ requests per API key, counted before any other work and outside the request's transaction.
    "hakimem.ratelimit.RateLimitMiddleware",
    # Each request that may read a project's rows runs in one transaction as a role under row-level security,
    # sessions included (the application's login role may not read them itself).
    "hakimem.rowsecurity.RowSecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # The admin's and the stats pages' projects are the signed-in person's.
    "hakimem.rowsecurity.StaffScopeMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# Each process holds a bounded pool: at most HAKI_DB_POOL_MAX connections (0 = no pool), of which
# HAKI_DB_POOL_MIN stay open; a connection idle for HAKI_DB_POOL_MAX_IDLE seconds beyond those is closed, and
# a request waits at most HAKI_DB_POOL_TIMEOUT seconds for one. The production server gives each worker as
# many as it has threads (config/gunicorn.py).
HAKI_DB_POOL_MAX = env_int("HAKI_DB_POOL_MAX", 4)
_pool = (
    {
        "min_size": min(env_int("HAKI_DB_POOL_MIN", 1), HAKI_DB_POOL_MAX),
        "max_size": HAKI_DB_POOL_MAX,
        "max_idle": env_float("HAKI_DB_POOL_MAX_IDLE", 60.0),
        # Short: a worker's pool has a connection per thread, so a request waits for one only while the database is gone.
        "timeout": env_float("HAKI_DB_POOL_TIMEOUT", 3.0),
    }
    if HAKI_DB_POOL_MAX > 0
    else None
)

# A small scope's candidates statement runs prepared on each connection (hakimem/postgresql/base.py); off for a
# pooler in transaction mode that keeps no prepared statement from one transaction to the next (docs/deploy.md).
HAKI_PREPARED_STATEMENTS = env_bool("HAKI_PREPARED_STATEMENTS", True)

if os.environ.get("DATABASE_URL"):
    DATABASES = {"default": database_settings(os.environ["DATABASE_URL"], pool=_pool)}
else:
    _pgdata = Path(os.environ.get("HAKI_PGDATA", VAR_DIR / "pgdata"))
    # HAKI_PGDATA_CLEANUP=delete gives a throw-away server (the test command uses it); unset keeps it
    # running for the next process.
    DATABASES = {
        "default": database_settings(
            start_embedded(_pgdata, cleanup=os.environ.get("HAKI_PGDATA_CLEANUP") or None), pool=_pool
        )
    }

# A streaming replica of that database: context calls read there when it holds their scope's latest writes
# (hakimem/db_router.py, docs/scaling.md "Read replicas"); every write stays on DATABASES["default"].
if os.environ.get("DATABASE_URL_REPLICA"):
    DATABASES["replica"] = replica_settings(os.environ["DATABASE_URL_REPLICA"], pool=_pool)
    DATABASE_ROUTERS = ["hakimem.db_router.ReplicaRouter"]

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = Path(os.environ.get("HAKI_STATIC_ROOT") or VAR_DIR / "static")  # collectstatic fills it at `make run`
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # Compressed copies made by collectstatic; no manifest, so templates render before (and without) it.
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
LOGIN_URL = "/admin/login/"

# Served over HTTPS (docs/deploy.md, "HTTPS"): each off by default, since `make run` serves plain HTTP.
# Behind a proxy that terminates TLS, HAKI_TRUST_X_FORWARDED_PROTO makes its X-Forwarded-Proto say whether the
# client's request was HTTPS; the proxy must set that header on every request, or a client could.
if env_bool("HAKI_TRUST_X_FORWARDED_PROTO", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env_bool("HAKI_SSL_REDIRECT", False)
# The probes and the metrics scraper call from inside the network, in plain HTTP.
SECURE_REDIRECT_EXEMPT = [r"^v1/health(/|$)", r"^metrics$"]
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env_bool("HAKI_SECURE_COOKIES", False)
SECURE_HSTS_SECONDS = env_int("HAKI_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("HAKI_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("HAKI_HSTS_PRELOAD", False)
# The Content-Security-Policy of every response (hakimem/csp.py); "off" sends none.
_csp = os.environ.get("HAKI_CSP", "").strip()
HAKI_CSP = "" if _csp.lower() == "off" else _csp or DEFAULT_POLICY

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# The largest request body, in bytes; larger ones answer 413 payload_too_large (hakimem/parsers.py reads at most
# this much). It must admit the largest documented write: a batch of 500 facts (facts.writes.MAX_BATCH) of 8,000
# characters (FACT_TEXT_MAX) with 16 KiB of metadata (hakimem.fields.METADATA_MAX_BYTES) and ~1 KiB of other
# fields each, whether the text is sent as UTF-8 (up to 4 bytes a character: 24.7 MB) or with non-ASCII escaped
# as \uXXXX (6 bytes a character: 32.7 MB). tests/hakimem/test_bad_input.py sends that batch.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("HAKI_MAX_BODY_BYTES", 32 * 1024 * 1024)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["hakimem.auth.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["hakimem.parsers.StrictJSONParser"],
    "EXCEPTION_HANDLER": "hakimem.errors.exception_handler",
    "UNAUTHENTICATED_USER": None,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "hakimem",
    "DESCRIPTION": "Long-term memory and context assembly for LLM applications. Every error answers "
    '{"error": {"code", "message", "details"}} (hakimem/errors.py).',
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": "/v1",
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "PATH_CONVERTER_OVERRIDES": {"id": {"type": "string", "format": "uuid"}},  # hakimem.validators.IdConverter
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "hakimem.schema.request_bodies_required",
        "hakimem.schema.malformed_ids_answer_400",
    ],
    "ENUM_NAME_OVERRIDES": {
        "FactStatusEnum": "facts.models.FactStatus",
        "ConflictStatusEnum": "facts.models.ConflictStatus",
    },
}

# django.request: a crash outside the API's handler (the admin's, the stats pages', a middleware's) with its
# traceback, which Django's own configuration prints only under DEBUG; its path without subject ids (config/logs.py).
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "filters": {"uncaught": {"()": "config.logs.UncaughtErrors"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "plain"},
        "crashes": {"class": "logging.StreamHandler", "formatter": "plain", "filters": ["uncaught"]},
    },
    "loggers": {
        "hakimem": {"handlers": ["console"], "level": os.environ.get("HAKI_LOG_LEVEL", "INFO")},
        "django.request": {"handlers": ["crashes"], "level": "ERROR", "propagate": False},
    },
}

# --- the product's knobs -------------------------------------------------------------------------------
# Web requests run as the row-security roles (hakimem/rowsecurity.py); off: as the connecting user, who sees
# every project (only for a database where the roles cannot be used).
HAKI_ROW_SECURITY = env_bool("HAKI_ROW_SECURITY", True)


# Requests per API key on /v1/ (hakimem/ratelimit.py), for all server processes together: "N/s", "N/min",
# "N/hour"; "off" for none. The default is far above what one key's benchmarks send.
HAKI_THROTTLE_RATE = parse_rate(os.environ.get("HAKI_THROTTLE_RATE", "1000/s"))
# /metrics answers only a request bearing this token (Authorization: Bearer ...); unset, /metrics is a 404.
HAKI_METRICS_TOKEN = os.environ.get("HAKI_METRICS_TOKEN", "")
# The admin's sign-in: after this many failed passwords for a username from one address (4x for an address, 20x
# for a username from every address) in the lockout window, even the right password is refused until the window
# ends. 0: no lockout.
HAKI_LOGIN_MAX_FAILURES = env_int("HAKI_LOGIN_MAX_FAILURES", 5)
HAKI_LOGIN_LOCKOUT_SECONDS = env_int("HAKI_LOGIN_LOCKOUT_SECONDS", 900)
HAKI_EMBED_PROVIDER = os.environ.get("HAKI_EMBED_PROVIDER", "sentence-transformers")
HAKI_EMBED_DIM = env_int("HAKI_EMBED_DIM", 384)
HAKI_EMBED_RUNTIME = os.environ.get("HAKI_EMBED_RUNTIME", "onnx")  # onnx | torch (sentence-transformers only)
HAKI_EMBED_THREADS = env_int("HAKI_EMBED_THREADS", 0)  # onnxruntime's threads per process; 0: one per core
HAKI_MODEL_DIR = os.environ.get("HAKI_MODEL_DIR", str(BASE_DIR / "var" / "models"))  # the exported ONNX model
HAKI_EMBED_URL = os.environ.get("HAKI_EMBED_URL", "")
HAKI_EMBED_MODEL = os.environ.get("HAKI_EMBED_MODEL", "")
HAKI_EMBED_API_KEY = os.environ.get("HAKI_EMBED_API_KEY", "")
HAKI_EMBED_TIMEOUT = env_float("HAKI_EMBED_TIMEOUT", 10.0)
# Fact extraction from events (ingest/extraction.py): off unless an OpenAI-compatible chat-completions URL is set.
HAKI_EXTRACTOR_URL = os.environ.get("HAKI_EXTRACTOR_URL", "")
HAKI_EXTRACTOR_MODEL = os.environ.get("HAKI_EXTRACTOR_MODEL", "")
HAKI_EXTRACTOR_API_KEY = os.environ.get("HAKI_EXTRACTOR_API_KEY", "")
HAKI_EXTRACTOR_TIMEOUT = env_float("HAKI_EXTRACTOR_TIMEOUT", 20.0)  # per attempt
HAKI_EXTRACTOR_RETRY_WAIT = env_float("HAKI_EXTRACTOR_RETRY_WAIT", 30.0)  # before the queue runs a failed job again
# A batch of facts with more characters than this is written by the task queue, answered 202 with a job (ingest/writes.py).
HAKI_WRITE_JOB_CHARS = env_int("HAKI_WRITE_JOB_CHARS", 100_000)
HAKI_EMBED_CACHE_SIZE = env_int("HAKI_EMBED_CACHE_SIZE", 2048)
# The embedder's circuit breaker (hakimem/embeddings.py): open after this many failures in a row, try again
# after the cool-down (seconds).
HAKI_EMBED_BREAKER_FAILURES = env_int("HAKI_EMBED_BREAKER_FAILURES", 3)
HAKI_EMBED_BREAKER_COOLDOWN = env_float("HAKI_EMBED_BREAKER_COOLDOWN", 30.0)

# The cosine thresholds of conflicts and duplicates. Unset (None): the values calibrated for the embedder in use
# (hakimem.embeddings.THRESHOLDS; MiniLM's: 0.75, 0.3, 0.92); set, they replace them for every embedder.
HAKI_CONFLICT_MIN_SIMILARITY = env_float("HAKI_CONFLICT_MIN_SIMILARITY", None)
# Two facts whose claims clash (facts.claims) conflict from this similarity up: the claims say they are about the
# same thing, the floor only keeps two unrelated texts a parse misread from meeting (docs/quality.md).
HAKI_CLAIM_MIN_SIMILARITY = env_float("HAKI_CLAIM_MIN_SIMILARITY", None)
HAKI_DUPLICATE_SIMILARITY = env_float("HAKI_DUPLICATE_SIMILARITY", None)
HAKI_CONFLICT_POLICY = os.environ.get("HAKI_CONFLICT_POLICY", "curator")  # or "newest_wins"


def _ttl_days(raw: str) -> dict[str, int]:
    """HAKI_VOLATILITY_TTL_DAYS="stable=365,volatile=7": days a fact of that volatility stays servable
    after it was last confirmed. `permanent` never expires and cannot be given a TTL."""
    ttl = {"stable": 365, "volatile": 7}
    for part in filter(None, (p.strip() for p in raw.split(","))):
        name, _, days = part.partition("=")
        if name.strip() not in ttl or not days.strip().isdigit() or int(days) < 1:
            raise ValueError(f"HAKI_VOLATILITY_TTL_DAYS: cannot read {part!r} (expected stable=N,volatile=N)")
        ttl[name.strip()] = int(days)
    return ttl


HAKI_VOLATILITY_TTL_DAYS = _ttl_days(os.environ.get("HAKI_VOLATILITY_TTL_DAYS", ""))

HAKI_MAX_BUDGET_TOKENS = env_int("HAKI_MAX_BUDGET_TOKENS", 32000)
HAKI_DEFAULT_BUDGET_TOKENS = 900
# The relevance floor (cosine distance; 0 = off). Unset (None): the floor calibrated for the embedder in use
# (hakimem.embeddings.THRESHOLDS), off for an embedder never calibrated.
HAKI_RECALL_MAX_DISTANCE = env_float("HAKI_RECALL_MAX_DISTANCE", None)

# A scope of this many active facts gets its own hnsw graph from the nightly consolidation (facts/scope_graphs.py):
# from ~10,800 facts the exact sort of its vectors (0.26 us a row) costs more than a walk of its own graph (256
# tuples at ~11 us; context/retrieval.py). 0: never automatically (`manage.py scope_graph create` still does).
HAKI_SCOPE_GRAPH_MIN_FACTS = env_int("HAKI_SCOPE_GRAPH_MIN_FACTS", 10_000)
if HAKI_SCOPE_GRAPH_MIN_FACTS < 0:
    raise ValueError("HAKI_SCOPE_GRAPH_MIN_FACTS: expected a number of facts, or 0 for never")

# A scope of this many active facts also gets its own full-text index (facts/scope_graphs.py): its lexical leg then
# reads its matches alone, where the shared GIN index's matches were ANDed with a bitmap of the whole scope (~0.13 us a
# fact: 13 ms at 100k). Each such index is one more predicate for every facts statement's planner. 0: never.
HAKI_SCOPE_TEXT_INDEX_MIN_FACTS = env_int("HAKI_SCOPE_TEXT_INDEX_MIN_FACTS", 50_000)
if HAKI_SCOPE_TEXT_INDEX_MIN_FACTS < 0:
    raise ValueError("HAKI_SCOPE_TEXT_INDEX_MIN_FACTS: expected a number of facts, or 0 for never")

# A scope of this many active facts (or events) gets its words counted by the nightly consolidation
# (facts.scope_words.scope_words_refresh): the lexical leg and multi-hop then judge a word by its count in the scope, not by its share
# of the table. Below ~1,000 items no word can exceed the leg's match budget (context/retrieval.py); counting a 10k
# scope takes ~20 ms. 0: never.
HAKI_SCOPE_WORDS_MIN_ITEMS = env_int("HAKI_SCOPE_WORDS_MIN_ITEMS", 2_000)
if HAKI_SCOPE_WORDS_MIN_ITEMS < 0:
    raise ValueError("HAKI_SCOPE_WORDS_MIN_ITEMS: expected a number of items, or 0 for never")

# Days a trace (and its decisions) is kept; `manage.py prune_traces` deletes older ones. 0, the default, keeps
# them forever: deleting history is the operator's decision, and the stats read up to 366 days back.
HAKI_TRACE_RETENTION_DAYS = env_int("HAKI_TRACE_RETENTION_DAYS", 0)
if HAKI_TRACE_RETENTION_DAYS < 0:
    raise ValueError("HAKI_TRACE_RETENTION_DAYS: expected a number of days, or 0 to keep traces forever")
