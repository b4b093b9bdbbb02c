"""Django's PostgreSQL backend, with a pooled connection checked without a round trip when it is taken, and a cursor
whose statements are prepared on their connection (PreparedCursor).

Django hands its pool psycopg_pool's check when CONN_HEALTH_CHECKS is on: an empty statement before every request,
one round trip to the database each time (a context call makes a dozen). A connection the server has ended (a restart,
pg_terminate_backend, an idle timeout) has its last message or its end of file waiting on the socket: only such a
connection needs the statement, which then fails and has the pool replace it, as before.
"""

from __future__ import annotations

import select

import psycopg
from django.conf import settings
from django.db.backends.postgresql import base, operations
from django.utils.asyncio import async_unsafe
from psycopg import DataError, OperationalError
from psycopg_pool import ConnectionPool

# psycopg prepares a statement after this many runs; None (the connection's setting) refuses even prepare=True.
PREPARE_ONLY_WHEN_ASKED = 2**62


def pooled_connection_check(conn) -> None:
    """psycopg_pool's check for a connection whose socket holds something unread, or that psycopg knows is closed;
    none for an idle connection whose server has said nothing since it was given back."""
    if conn.closed:
        raise OperationalError("the pooled connection is closed")
    poller = select.poll()
    poller.register(conn.fileno(), select.POLLIN | select.POLLPRI)
    if poller.poll(0):
        ConnectionPool.check_connection(conn)


class DatabaseOperations(operations.DatabaseOperations):
    def last_executed_query(self, cursor, sql, params):
        # A statement run by name leaves psycopg no text of it; Django's query log (and the tests that read it) want one.
        if isinstance(cursor, PreparedCursor):
            try:
                return self.compose_sql(sql, params)
            except DataError:
                return None
        return super().last_executed_query(cursor, sql, params)


class DatabaseWrapper(base.DatabaseWrapper):
    ops_class = DatabaseOperations

    @async_unsafe
    def prepared_cursor(self):
        """A cursor as connection.cursor() gives (logged, execute wrappers applied, the connection's time zone) whose
        statements are prepared (PreparedCursor); an ordinary one when HAKI_PREPARED_STATEMENTS is off (a pooler in
        transaction mode that keeps no prepared statement between transactions, docs/deploy.md)."""
        if not settings.HAKI_PREPARED_STATEMENTS:
            return self.cursor()
        self.close_if_health_check_failed()
        self.ensure_connection()
        with self.wrap_database_errors:
            cursor = PreparedCursor(self.connection)
            tzloader = self.connection.adapters.get_loader(base.TIMESTAMPTZ_OID, base.Format.TEXT)
            if self.timezone != tzloader.timezone:  # as create_cursor does
                base.register_tzloader(self.timezone, cursor)
            return self._prepare_cursor(cursor)

    @property
    def pool(self):
        pool = super().pool
        # The pool is made once per alias and process (Django keeps it in a class-level map): given its check here.
        if pool is not None and pool._check is ConnectionPool.check_connection:
            pool._check = pooled_connection_check
        return pool


class PreparedCursor(psycopg.Cursor):
    """Server-side binding, each statement prepared on its connection the first time it runs there (psycopg keeps it by
    name until the connection ends or rolls back): PostgreSQL then skips parsing it, and planning it too once it
    settles on a generic plan (after five runs, if that plan costs no more than the custom ones; with a project's
    scopes of very different sizes it may keep custom plans). Only for a statement whose plan does not depend on its
    parameters: never the two-phase retrieval, whose generic plan loses the hnsw index (hakimem/dbserver.py).
    The connection's prepare_threshold stays None between two such statements, so psycopg neither counts Django's
    statements nor drops the prepared ones at a ROLLBACK TO SAVEPOINT."""

    def execute(self, query, params=None, *, prepare=None, binary=None):
        self.connection.prepare_threshold = PREPARE_ONLY_WHEN_ASKED
        try:
            return super().execute(query, params, prepare=True, binary=binary)
        finally:
            self.connection.prepare_threshold = None
