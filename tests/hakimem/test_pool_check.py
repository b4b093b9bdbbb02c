"""The pool's check when a request takes a connection (hakimem/postgresql/base.py): nothing sent for a healthy idle
connection, the full check (which fails) for one the server has ended."""

import time

import psycopg
import pytest
from django.db import connection
from psycopg_pool import ConnectionPool

from bench.server import database_url
from hakimem.postgresql.base import pooled_connection_check

pytestmark = pytest.mark.django_db


@pytest.fixture
def full_checks(monkeypatch):
    """The connections psycopg_pool's own check (an empty statement) was sent on."""
    checked, check = [], ConnectionPool.check_connection

    def counted(conn):
        checked.append(conn)
        check(conn)

    monkeypatch.setattr(ConnectionPool, "check_connection", staticmethod(counted))
    return checked


def test_a_healthy_idle_connection_is_handed_over_without_a_round_trip(full_checks):
    with psycopg.connect(database_url(connection.settings_dict), autocommit=True) as conn:
        conn.execute("SELECT 1")
        pooled_connection_check(conn)
        assert full_checks == []


def test_a_connection_the_server_ended_fails_its_check(full_checks):
    url = database_url(connection.settings_dict)
    with psycopg.connect(url, autocommit=True) as conn, psycopg.connect(url, autocommit=True) as admin:
        # given a pooled connection the server terminates (as a restart does)
        admin.execute("SELECT pg_terminate_backend(%s)", [conn.info.backend_pid])
        time.sleep(0.2)  # its FATAL message and end of file reach the socket
        # then its check sends the full one, which fails: the pool replaces it
        with pytest.raises(psycopg.OperationalError):
            pooled_connection_check(conn)
        assert full_checks == [conn]


def test_the_app_pool_uses_it():
    connection.ensure_connection()  # the pool is made with the first connection
    assert connection.pool is not None and connection.pool._check is pooled_connection_check
