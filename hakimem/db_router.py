"""Read replicas: a context call's reads on DATABASE_URL_REPLICA when it holds the scope's latest writes.

Only reads that opt in go to the replica: `reads_for_scope` runs a function with `read_connection()` (the raw
SQL of the hot path) and the ORM's reads (ReplicaRouter.db_for_read) pointed at the replica alias. Everything
else, and every write (the trace of the call among them), stays on the primary, "default".

Read-your-writes: triggers on the memory tables record, per scope, the last transaction that changed them
(facts.models.ScopeWrite). A call reads that record on the primary (one statement in the request's own
transaction, which also gives the role and project it runs as), then asks the replica, in the statement that
takes the same role and project there, whether it holds the very same record. Replay follows the primary's
commit order, so an identical record means the replica has replayed every write of the scope committed before
the call started (and of the project's settings); anything else, the call reads on the primary. No clock, no
lag bound: a replica hours behind still serves the scopes nobody wrote meanwhile, and never a stale one.

A replica that fails (down, unreachable, not migrated, a statement cancelled by recovery) is left alone for
REPLICA_RETRY_SECONDS by this process, with a warning; its calls read on the primary meanwhile. Every call says
where it read in hakimem_context_reads_total{database, reason}. Unset DATABASE_URL_REPLICA: nothing of this
runs (one dictionary lookup a call).
"""

from __future__ import annotations

import logging
import time
from contextvars import ContextVar
from typing import Callable, TypeVar

from django.db import DEFAULT_DB_ALIAS, DatabaseError, connection, connections, transaction

from hakimem import observability
from hakimem.rowsecurity import PROJECT_SETTING

logger = logging.getLogger("hakimem.db")

REPLICA = "replica"
# How long a process leaves a failed replica alone before trying it again.
REPLICA_RETRY_SECONDS = 10.0

T = TypeVar("T")

_reads_from: ContextVar[str] = ContextVar("hakimem_reads_from", default=DEFAULT_DB_ALIAS)
_down_until = {"at": 0.0}


class ReplicaRouter:
    """The ORM's side: reads where the current `reads_for_scope` reads (the primary outside one), writes and
    migrations on the primary only (the replica is a physical copy: it replays the primary's, and refuses
    its own)."""

    def db_for_read(self, model, **hints):
        return _reads_from.get()

    def db_for_write(self, model, **hints):
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1, obj2, **hints):
        return True  # the same database, seen through two connections

    def allow_migrate(self, db, app_label, model_name=None, **hints):
        return db == DEFAULT_DB_ALIAS


def replica_configured() -> bool:
    return REPLICA in connections.settings


def read_connection():
    """The connection the current reads go to: the replica inside `reads_for_scope` when it serves the call,
    else the request's own (the primary)."""
    return connections[_reads_from.get()]


def _primary_sql(written_sql: str) -> str:
    return f"SELECT ({written_sql}), current_setting('role'), coalesce(current_setting('{PROJECT_SETTING}', true), '')"


def _replica_sql(written_sql: str) -> str:
    # The role and project are transaction-local, like the request's on the primary (hakimem/rowsecurity.py).
    return (
        f"SELECT ({written_sql}) IS NOT DISTINCT FROM %(hakimem_seen)s, set_config('role', %(hakimem_role)s, true),"
        f" set_config('{PROJECT_SETTING}', %(hakimem_projects)s, true)"
    )


def reads_for_scope(reads: Callable[[], T], *, written_sql: str, params: dict) -> T:
    """`reads()` on the replica when one is configured, up, and holds the same `written_sql` value (one text,
    or NULL: the scope's write record, facts.selectors.SCOPE_WRITTEN_SQL) as the primary; else on the primary.
    On the replica it runs in a read-only transaction of its own, as the role and project the primary's
    connection runs as now."""
    if not replica_configured():
        return reads()
    if time.monotonic() < _down_until["at"]:
        observability.context_reads("primary", "replica_unavailable")
        return reads()
    with connection.cursor() as cursor:
        cursor.execute(_primary_sql(written_sql), params)
        seen, role, projects = cursor.fetchone()
    try:
        with transaction.atomic(using=REPLICA):
            with connections[REPLICA].cursor() as cursor:
                cursor.execute(
                    _replica_sql(written_sql),
                    {**params, "hakimem_seen": seen, "hakimem_role": role, "hakimem_projects": projects},
                )
                fresh = cursor.fetchone()[0]
            if fresh:
                token = _reads_from.set(REPLICA)
                try:
                    result = reads()
                finally:
                    _reads_from.reset(token)
                observability.context_reads("replica", "fresh")
                return result
    except DatabaseError as exc:
        _down_until["at"] = time.monotonic() + REPLICA_RETRY_SECONDS
        logger.warning(
            "read replica failed, reading on the primary for %.0f s: %s",
            REPLICA_RETRY_SECONDS,
            str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__,
        )
        observability.context_reads("primary", "replica_unavailable")
        return reads()
    observability.context_reads("primary", "replica_behind")
    return reads()


def replica_retry_now() -> None:
    """Forget a failure: the next call tries the replica again (tests; an operator's shell after a fix)."""
    _down_until["at"] = 0.0
