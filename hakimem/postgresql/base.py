"""Django's PostgreSQL backend, with a pooled connection checked without a round trip when it is taken.

Django hands its pool psycopg_pool's check when CONN_HEALTH_CHECKS is on: an empty statement before every request,
one round trip to the database each time (a context call makes a dozen). A connection the server has ended (a restart,
pg_terminate_backend, an idle timeout) has its last message or its end of file waiting on the socket: only such a
connection needs the statement, which then fails and has the pool replace it, as before.
"""

from __future__ import annotations

import select

from django.db.backends.postgresql import base
from psycopg import OperationalError
from psycopg_pool import ConnectionPool


def pooled_connection_check(conn) -> None:
    """psycopg_pool's check for a connection whose socket holds something unread, or that psycopg knows is closed;
    none for an idle connection whose server has said nothing since it was given back."""
    if conn.closed:
        raise OperationalError("the pooled connection is closed")
    poller = select.poll()
    poller.register(conn.fileno(), select.POLLIN | select.POLLPRI)
    if poller.poll(0):
        ConnectionPool.check_connection(conn)


class DatabaseWrapper(base.DatabaseWrapper):
    @property
    def pool(self):
        pool = super().pool
        # The pool is made once per alias and process (Django keeps it in a class-level map): given its check here.
        if pool is not None and pool._check is ConnectionPool.check_connection:
            pool._check = pooled_connection_check
        return pool
