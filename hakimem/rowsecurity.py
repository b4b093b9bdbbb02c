"""Row-level security: isolation between projects held by PostgreSQL itself, under the Python filters.

Every table that holds a project's rows has policies for two roles; a web request runs as one of them for
its whole transaction, so a query that forgets its `project_id` filter still sees only what the request may:

- `hakimem_api` (API_ROLE): sees the rows whose project is `hakimem.project_id`, the one project of the
  request's key; unset or empty, it sees nothing. Every /v1/ request runs as it, from the statement that takes
  the role and finds the bearer's key, which names its project (none without a live key).
- `hakimem_staff` (STAFF_ROLE): the admin and the /stats/ pages, whose visitor's session and account it reads
  (the only role with the people's, the sessions' and the keys' tables). `hakimem.project_id` is "" for a
  visitor not signed in, "*" (every project: superusers and staff not limited to projects) or the comma-separated
  projects a staff user is limited to (StaffProjectAccess). Who may open which page stays the views' business.

Both are NOLOGIN, NOSUPERUSER, NOBYPASSRLS roles the connecting user switches to with
`set_config('role', ..., true)`: transaction-local, like the project (SET LOCAL), so a pooled connection goes back to the
pool as the connecting user with nothing set, and no value reaches the next request. The web server connects as
the application's login role (docs/isolation.md), itself bound by the API role's policies and rights: leaving
the role (RESET ROLE) gains a request nothing. Superusers and table owners bypass row security (the tables are
not FORCEd), so what does not switch and connects as the owner sees every project on purpose: migrations,
management commands, the benchmark and evaluation scripts, a test's own set-up. Every such table holds its own
project_id (conflict members since facts/migrations/0012_project_in_keys; before, they were visible when their
set was: enable_child_sql).
"""

from __future__ import annotations

from contextlib import ExitStack, contextmanager

from django.conf import settings
from django.db import DatabaseError, InterfaceError, connection, transaction

API_ROLE = "hakimem_api"
STAFF_ROLE = "hakimem_staff"
PROJECT_SETTING = "hakimem.project_id"
ALL_PROJECTS = "*"
# The project is set by a SET LOCAL statement, not set_config(): on a Citus cluster the coordinator passes a SET
# LOCAL on to the workers that run the statement on the shards (citus.propagate_set_commands = 'local'), where the
# policies are checked; a set_config() stays on the coordinator and the workers' shards would show nothing. The
# value is bound client-side (Django's psycopg cursor), so it arrives as a quoted literal.
PROJECT_SET_SQL = f"SET LOCAL {PROJECT_SETTING} = %s"

# Requests that touch no project's rows keep the plain connection (and no transaction): the probes must
# answer while the database does not, static files and the API's description (/v1/schema, /docs) never
# reach Django's database.
UNSCOPED_PREFIXES = ("/v1/health", "/metrics", "/static/", "/v1/schema", "/docs")


# --- policies (written by the migrations of the apps that own the tables) ---------------------------------


def _own_project(column: str = "project_id") -> str:
    return f"{column} = current_setting('{PROJECT_SETTING}', true)"


def _staff_projects(column: str = "project_id") -> str:
    # "*" first: on the staff pages' big aggregates the test stops at the first term of each row.
    return (
        f"(current_setting('{PROJECT_SETTING}', true) = '{ALL_PROJECTS}' OR "
        f"{column} = ANY (string_to_array(current_setting('{PROJECT_SETTING}', true), ',')))"
    )


def enable_sql(table: str) -> list[str]:
    """Row security on a table with a project_id column."""
    return [
        f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY",
        f"CREATE POLICY api_own_project ON {table} TO {API_ROLE} USING ({_own_project()}) WITH CHECK ({_own_project()})",
        f"CREATE POLICY staff_projects ON {table} TO {STAFF_ROLE} USING ({_staff_projects()}) WITH CHECK ({_staff_projects()})",
    ]


def enable_child_sql(table: str, *, parent: str, fk: str) -> list[str]:
    """Row security on a table whose rows belong to a parent row's project: a row is visible when its
    parent is (the subquery is itself under the parent's policies). A check per row: for small tables only
    (conflict members); a big one holds its own project_id (decisions: the stats over 200k of them took 3x
    as long through their traces)."""
    visible = f"EXISTS (SELECT 1 FROM {parent} p WHERE p.id = {table}.{fk})"
    staff = f"(current_setting('{PROJECT_SETTING}', true) = '{ALL_PROJECTS}' OR {visible})"
    return [
        f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY",
        f"CREATE POLICY api_own_project ON {table} TO {API_ROLE} USING ({visible}) WITH CHECK ({visible})",
        f"CREATE POLICY staff_projects ON {table} TO {STAFF_ROLE} USING ({staff}) WITH CHECK ({staff})",
    ]


def disable_sql(table: str) -> list[str]:
    return [
        f"DROP POLICY IF EXISTS api_own_project ON {table}",
        f"DROP POLICY IF EXISTS staff_projects ON {table}",
        f"ALTER TABLE {table} DISABLE ROW LEVEL SECURITY",
    ]


# The tables the API role never reads: people's accounts, sessions and the admin's history, the keys and the staff's
# project limits (hakimem/migrations/0005). A table made again later (a restore) gets the schema's default
# privileges, which give them back: api_role_revoke runs again then.
WITHOUT_API = [
    ("auth", "User"),
    ("auth", "Group"),
    ("auth", "Permission"),
    ("sessions", "Session"),
    ("admin", "LogEntry"),
    ("hakimem", "ApiKey"),
    ("hakimem", "StaffProjectAccess"),
]


def without_api_tables(apps) -> list[str]:
    """The WITHOUT_API models' tables, with their many-to-many tables, in `apps` (a migration's or the project's)."""
    tables = []
    for label, name in WITHOUT_API:
        model = apps.get_model(label, name)
        tables.append(model._meta.db_table)
        tables.extend(f.remote_field.through._meta.db_table for f in model._meta.local_many_to_many)
    return tables


def api_role_revoke(cursor, tables: list[str]) -> None:
    """Take from API_ROLE every right on `tables` and on their id sequences (identity or serial)."""
    for table in tables:
        cursor.execute(f'REVOKE ALL ON TABLE "{table}" FROM {API_ROLE}')
        cursor.execute(
            "SELECT s.oid::regclass::text FROM pg_depend d JOIN pg_class s ON s.oid = d.objid"
            " WHERE s.relkind = 'S' AND d.refobjid = %s::regclass",
            [table],
        )
        for (sequence,) in cursor.fetchall():
            cursor.execute(f"REVOKE ALL ON SEQUENCE {sequence} FROM {API_ROLE}")


# --- the request's scope -----------------------------------------------------------------------------------


def scope_enter(role: str, projects: str = "") -> tuple[str, str]:
    """Run the rest of the current transaction as `role`, seeing `projects` (one project for API_ROLE; "*"
    or a comma-separated list for STAFF_ROLE; "" for nothing). One round trip, transaction-local. Returns the
    role and projects in force before ("none" and "" for the connecting user's own)."""
    with connection.cursor() as cursor:
        # The select list is evaluated left to right: the values before, then the new ones.
        cursor.execute(
            "SELECT current_setting('role'), coalesce(current_setting(%s, true), ''),"
            f" set_config('role', %s, true); {PROJECT_SET_SQL}",
            [PROJECT_SETTING, role, projects],
        )
        before_role, before_projects, _ = cursor.fetchone()
    return before_role, before_projects


# An API request's first statement: the API role with no project, then the project of the bearer's live key if there
# is one (hakimem_api_key_find sets it), in one round trip. The subquery is evaluated first (its volatile select list
# keeps it whole, and the function's argument refers to it), so the key is looked up as the API role; its row is
# there whether or not a key is found.
_API_ENTER_SQL = f"""
SELECT s.role_before, s.projects_before, k.key_id, k.key_project_id
  FROM (SELECT current_setting('role') AS role_before,
               coalesce(current_setting('{PROJECT_SETTING}', true), '') AS projects_before,
               set_config('role', '{API_ROLE}', true) AS role, set_config('{PROJECT_SETTING}', '', true) AS projects) s
  LEFT JOIN LATERAL hakimem_api_key_find(CASE WHEN s.role = '{API_ROLE}' THEN %(key_hash)s END, true) k ON true
"""


def api_scope_enter(key_hash: str | None) -> tuple[tuple[str, str], tuple[int, str] | None]:
    """scope_enter(API_ROLE) and the key lookup in one statement: the role and projects in force before, and the
    (key id, project) of the live key whose hash is `key_hash` (None: no such key, or no key sent), whose project the
    rest of the transaction then sees."""
    with connection.cursor() as cursor:
        cursor.execute(_API_ENTER_SQL, {"key_hash": key_hash})
        before_role, before_projects, key_id, key_project = cursor.fetchone()
    return (before_role, before_projects), (None if key_id is None else (key_id, key_project))


@contextmanager
def api_transaction(project_id: str):
    """A transaction of its own as API_ROLE over `project_id`, for work an API request does after its own
    transaction ended (the context call's trace, written once the response is sent). Inside an outer
    transaction (the test suite's) the role and project in force before are put back, as the middleware does."""
    nested = connection.in_atomic_block
    with transaction.atomic():
        if not settings.HAKI_ROW_SECURITY:
            yield
            return
        before = scope_enter(API_ROLE, project_id)
        yield
        # On an error the savepoint's rollback puts them back itself.
        if nested and not connection.needs_rollback:
            scope_enter(*before)


def bearer_key_hash(header: str) -> str | None:
    """The stored hash of the key in an `Authorization: Bearer <key>` header; None for any other header."""
    from hakimem.models import hash_key

    scheme, _, raw = header.partition(" ")
    return hash_key(raw.strip()) if scheme == "Bearer" and raw.strip() else None


def _signed_in_projects(request) -> str:
    """The admin's and the stats pages' projects: every project or those a staff user is limited to for a
    signed-in active user; none for anyone else."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated or not user.is_active:
        return ""
    from hakimem.models import staff_projects

    projects = staff_projects(user)
    return ALL_PROJECTS if projects is None else ",".join(projects)


def _scoped(request) -> bool:
    return settings.HAKI_ROW_SECURITY and not request.path_info.startswith(UNSCOPED_PREFIXES)


class RowSecurityMiddleware:
    """Each request that may read a project's rows runs in one transaction, as API_ROLE (/v1/) or STAFF_ROLE
    (the admin, /stats/): an API request's project is its bearer key's, found by the statement that takes the role
    (ApiKeyAuthentication reads what it found), the staff pages' are named by StaffScopeMiddleware. The
    transaction commits when the response is not a server error; a refused API request is rolled back by the
    error handler (nothing written). It comes before the sessions' middleware: a person's session and account
    are read and written as STAFF_ROLE, the only role that may (the application's login role may not).

    Inside an outer transaction (the test suite's), the role and the project are put back afterwards: they
    are transaction-local, and the outer transaction would otherwise keep them after the request."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not _scoped(request):
            return self.get_response(request)
        api = request.path_info.startswith("/v1/")
        nested = connection.in_atomic_block
        with ExitStack() as stack:
            try:
                stack.enter_context(transaction.atomic())
                if api:
                    # The bearer's key is looked up by the statement that takes the role (ApiKeyAuthentication reads
                    # what it found): one round trip, where the role and then the key took two.
                    key_hash = bearer_key_hash(request.META.get("HTTP_AUTHORIZATION", ""))
                    before, request.hakimem_key = api_scope_enter(key_hash)
                    request.hakimem_key_hash = key_hash
                else:
                    before = scope_enter(STAFF_ROLE, "")
            except (DatabaseError, InterfaceError) as exc:
                if connection.in_atomic_block:
                    transaction.set_rollback(True)
                if not request.path_info.startswith("/v1/"):
                    raise
                from hakimem.errors import database_unavailable_response

                return database_unavailable_response(exc)  # the API's error contract, never Django's HTML page
            try:
                response = self.get_response(request)
                if response.status_code >= 500:
                    transaction.set_rollback(True)
            finally:
                if nested and not connection.needs_rollback:  # a rollback to the savepoint restores them itself
                    scope_enter(*before)
        return response


class StaffScopeMiddleware:
    """After the authentication's middleware: the admin's and the stats pages' request sees the projects of the
    person signed in (RowSecurityMiddleware puts the scope back at the end)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if _scoped(request) and not request.path_info.startswith("/v1/"):
            projects = _signed_in_projects(request)
            if projects:
                with connection.cursor() as cursor:
                    cursor.execute(PROJECT_SET_SQL, [projects])
        return self.get_response(request)


# The full-text match made LEAKPROOF, so that under row security the lexical leg keeps its GIN index as an index
# condition (facts/migrations/0008_row_level_security explains why it leaks nothing). An attribute of a pg_catalog
# function: a dump does not hold it and Citus does not pass it on to the workers, so `manage.py restore` and
# `manage.py citus_distribute` set it again (on the cluster, the workers run the statements). Needs a superuser.
MATCH_LEAKPROOF_SQL = "ALTER FUNCTION pg_catalog.ts_match_vq(tsvector, tsquery) LEAKPROOF"
MATCH_LEAKPROOF_IF_ALLOWED_SQL = f"""
DO $$
BEGIN
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        {MATCH_LEAKPROOF_SQL};
    ELSE
        RAISE WARNING 'hakimem: run {MATCH_LEAKPROOF_SQL} as a superuser, or the full-text leg of context calls '
                      'cannot use its GIN index under row security';
    END IF;
END
$$"""
