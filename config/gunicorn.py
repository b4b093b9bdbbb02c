"""The production server's configuration: `gunicorn -c python:config.gunicorn config.wsgi` (`make run`).

Read by gunicorn's master before any worker exists, so:
- the embedded PostgreSQL (when DATABASE_URL is unset) is started here, once, and handed to the workers as
  DATABASE_URL, logging in as the application's role: they never touch pgserver (each would otherwise take its
  lock and check the server in turn);
- each worker gets a connection pool of one connection per thread (HAKI_DB_POOL_MAX), so a request never
  waits for a connection and none idles; the master refuses to start when workers x pool would not fit in
  the server's max_connections with room to spare for migrations, shells and the admin's own scripts.
- a worker of the task queue's `writes` queue (manage.py write_worker) is started beside them, unless
  HAKI_WRITE_WORKER is off: POST /v1/facts hands it the batches too heavy for a request (ingest/writes.py);
The application is not preloaded in the master: onnxruntime's thread pools do not survive a fork, so each
worker loads Django and the embedding model itself, before it takes its first request (post_worker_init).

HAKI_BIND (default 127.0.0.1:$HAKI_PORT, port 8000), HAKI_WORKERS, HAKI_THREADS and HAKI_ACCESS_LOG ("-" for
stdout, the default; "" for none) override the defaults below; HAKI_LOG_SUBJECT_IDS (off) lets the access log show
subject ids (config/logs.py).
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VAR_DIR = ROOT / "var"
_embedded_pgdata: Path | None = None  # the embedded server's folder, when on_starting started it
_write_worker = None  # the task queue's worker of heavy fact batches (ingest/writes.py), when on_starting started it
SPARE_CONNECTIONS = 10  # kept free beside the workers' pools: migrate, a shell, a benchmark, the write worker
WRITE_WORKER_NAME = "hakimem-write-worker"  # its connections' application_name


def _int(name: str, default: int) -> int:
    value = os.environ.get(name)
    return default if value in (None, "") else int(value)


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


# A context call is CPU work shared between the worker (Python, the embedding model) and PostgreSQL on the
# same cores: one worker per core keeps them busy while the others wait on the database, one more covers the
# wait. Measured on 2 cores shared with other jobs (docs/performance.md, scripts/bench_http.py, 8 clients):
# 2, 3 or 4 sync workers and 2 workers x 2 threads all served 33-53 calls/s on a 50-fact scope and 17-33 on a
# 10k one, within the noise of the machine's load; none was better enough to leave the plain sync worker.
workers = _int("HAKI_WORKERS", _cores() + 1)
threads = _int("HAKI_THREADS", 1)
worker_class = "gthread" if threads > 1 else "sync"
bind = os.environ.get("HAKI_BIND") or f"127.0.0.1:{_int('HAKI_PORT', 8000)}"
timeout = 60  # a worker silent this long is killed and replaced (a batch of facts too heavy for it is a job: ingest/writes.py)
graceful_timeout = 20
keepalive = 5
accesslog = os.environ.get("HAKI_ACCESS_LOG", "-") or None
logger_class = "config.logs.AccessLogger"  # no subject id in the access log, unless HAKI_LOG_SUBJECT_IDS is on
wsgi_app = "config.wsgi:application"
# gunicorn 24+ opens a control socket at one fixed path per user: a second server (the benchmark's, the
# tests') would take it over from the first. Nothing here uses it.
control_socket_disable = True

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("HAKI_DB_POOL_MAX", str(threads))
os.environ.setdefault("HAKI_DB_POOL_MIN", "1")


def on_starting(server) -> None:
    """In the master, once: the database, the workers' login, and the check that their pools fit in it.

    The workers connect as the application's login role (docs/isolation.md): HAKI_APP_DATABASE_URL when set,
    else on the embedded server its `hakimem_app` (unless HAKI_ROW_SECURITY is off: that role alone sees no
    project), else DATABASE_URL itself. Migrations and commands keep DATABASE_URL, the tables' owner."""
    # Ctrl-C (SIGINT) stops as SIGTERM does: the workers finish their requests within graceful_timeout, where
    # gunicorn's own SIGINT killed them mid-request (their clients got its HTML 500). A second Ctrl-C still stops
    # them at once.
    server.handle_int = server.handle_term
    app_url = os.environ.get("HAKI_APP_DATABASE_URL")
    owner_url = os.environ.get("DATABASE_URL")
    if not owner_url:
        from hakimem.dbserver import app_database_url, start_embedded

        pgdata = Path(os.environ.get("HAKI_PGDATA") or VAR_DIR / "pgdata")
        owner_url = start_embedded(pgdata, cleanup=os.environ.get("HAKI_PGDATA_CLEANUP") or None)
        global _embedded_pgdata
        _embedded_pgdata = pgdata
        row_security = _on("HAKI_ROW_SECURITY")
        app_url = app_url or (app_database_url(owner_url) if row_security else owner_url)
    if _on("HAKI_WRITE_WORKER"):
        _start_write_worker(server, owner_url)
    if app_url:
        os.environ["DATABASE_URL"] = app_url  # what the workers' settings read
    _check_connection_budget(server)
    _metrics_folder()


def _on(name: str) -> bool:
    return os.environ.get(name, "on").strip().lower() in ("1", "true", "yes", "on")


def _start_write_worker(server, database_url: str) -> None:
    """The worker of the `writes` queue: a batch of facts too heavy for a request (POST /v1/facts answers 202) is
    written there. One process, as the tables' owner (each job runs as the API role over its project)."""
    import subprocess

    global _write_worker
    from urllib.parse import parse_qsl, urlencode, urlsplit

    # Its own connections, not a server worker's pool of one (the command's start-up keeps one in its main thread),
    # named apart from the server's in pg_stat_activity.
    url = urlsplit(database_url)
    query = urlencode({**dict(parse_qsl(url.query)), "application_name": WRITE_WORKER_NAME})
    env = {**os.environ, "DATABASE_URL": url._replace(query=query).geturl(), "HAKI_DB_POOL_MAX": "0"}
    # Under config/supervise.py, which starts it again if it dies; in a process group of its own, killed whole below.
    command = [sys.executable, "-m", "config.supervise", sys.executable, str(ROOT / "manage.py"), "write_worker"]
    _write_worker = subprocess.Popen(command, cwd=ROOT, env=env, start_new_session=True)
    server.log.info("write worker started (pid %d, supervised)", _write_worker.pid)


def _check_connection_budget(server) -> None:
    import psycopg

    pool_max = int(os.environ["HAKI_DB_POOL_MAX"])
    with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as conn:
        limit, reserved = conn.execute(
            "SELECT current_setting('max_connections')::int,"
            " current_setting('superuser_reserved_connections')::int + current_setting('reserved_connections')::int"
        ).fetchone()
        login, unbound = conn.execute(
            "SELECT rolname, rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
    if unbound:
        server.log.warning(
            "the workers connect as %s, a superuser or a role that bypasses row security: a request "
            "can leave its role and see every project; set HAKI_APP_DATABASE_URL (docs/isolation.md)",
            login,
        )
    needed = server.cfg.workers * max(pool_max, 1)
    if needed + SPARE_CONNECTIONS > limit - reserved:
        server.log.error(
            "%d workers x %d pooled connections (+%d spare) exceed the database's %d connections (%d reserved): "
            "lower HAKI_WORKERS or HAKI_DB_POOL_MAX, or raise max_connections",
            server.cfg.workers,
            pool_max,
            SPARE_CONNECTIONS,
            limit,
            reserved,
        )
        sys.exit(1)
    server.log.info("database: %d workers x %d pooled connections of %d", server.cfg.workers, pool_max, limit)


def _metrics_folder() -> None:
    """prometheus-client's multiprocess mode: every worker writes its series to files in one folder, which
    /metrics reads whichever worker answers. A fresh folder per master: old workers' files would add up."""
    given = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    folder = Path(given or VAR_DIR / "prometheus" / str(os.getpid()))
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob("*.db"):
        stale.unlink()
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(folder)


def post_fork(server, worker) -> None:
    """In each new worker: its OpenTelemetry exporter, when OTEL_EXPORTER_OTLP_ENDPOINT is set. The batch processor's
    thread must be started in the process that ends spans (a thread does not survive a fork); the master never
    starts one."""
    from hakimem import telemetry

    telemetry.setup()


def worker_exit(server, worker) -> None:
    """The spans a worker still holds are exported before it exits."""
    from hakimem import telemetry

    telemetry.shutdown()


def post_worker_init(worker) -> None:
    """Before the first request: open the database pool and load the embedding model (a second or two for
    MiniLM), so no client pays for them. A failure is left to /v1/health/ready to report."""
    # Ctrl-C reaches the workers too (the terminal signals the whole process group): finish the request, then exit.
    signal.signal(signal.SIGINT, worker.handle_exit)
    signal.siginterrupt(signal.SIGINT, False)
    try:
        from django.db import connection

        from hakimem.embeddings import get_embedder

        from hakimem.observability import pool_gauges

        connection.ensure_connection()
        connection.close()  # back to the pool
        pool_gauges()
        get_embedder().embed(["warm up"])
    except Exception as exc:  # noqa: BLE001 - the worker still serves; readiness says what is wrong
        worker.log.warning("worker warm-up failed: %s", exc)


def child_exit(server, worker) -> None:
    """A worker's gauges die with it (its counters and histograms stay in the totals)."""
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)


def on_exit(server) -> None:
    if _write_worker and _write_worker.poll() is None:  # it finishes the job in hand first
        _write_worker.terminate()
        try:
            _write_worker.wait(graceful_timeout)
        except Exception:  # noqa: BLE001 - still running: killed, its transaction rolled back (nothing written)
            os.killpg(_write_worker.pid, signal.SIGKILL)  # the supervisor and the worker
    folder = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if folder and Path(folder).parent == VAR_DIR / "prometheus":
        shutil.rmtree(folder, ignore_errors=True)
    if _embedded_pgdata:  # left running on purpose: commands and shells may be using it
        server.log.info("the embedded PostgreSQL (%s) keeps running; `make stop` stops it", _embedded_pgdata)
