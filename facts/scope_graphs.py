"""Dedicated hnsw graphs of single large scopes: their naming, which the context path reads to know which
scopes have one (context/retrieval.py), and their DDL (`manage.py scope_graph`).

Kept apart from facts.services, the store's writes: naming a scope's graph is a read every layer above may do,
and the DDL runs outside any request.
"""
from __future__ import annotations

import hashlib

from django.db import connection
from psycopg import sql

from facts.models import HNSW_EF_CONSTRUCTION, HNSW_M

SCOPE_GRAPH_PREFIX = "facts_fact_scope_hnsw_"


def scope_graph_name(project_id: str, subject_id: str) -> str:
    digest = hashlib.sha1(f"{project_id}\0{subject_id}".encode("utf-8")).hexdigest()[:16]
    return f"{SCOPE_GRAPH_PREFIX}{digest}"


def scope_graph_create(*, project_id: str, subject_id: str) -> str:
    """A dedicated hnsw graph over one scope's active facts: a partial index the planner uses for that scope
    alone (its predicate holds the scope's literal ids), so the dense leg walks no other scope's facts. For
    scopes that are both large and a small share of a large table, where the shared graph, filtered to the
    scope, visits ~DENSE_TOP_K / share tuples (docs/performance.md). Built CONCURRENTLY: writes go on.
    Each such scope pays a second hnsw insert per new fact. Returns the index name."""
    name = scope_graph_name(project_id, subject_id)
    statement = sql.SQL(
        "CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON facts_fact USING hnsw (embedding halfvec_cosine_ops)"
        " WITH (m = {m}, ef_construction = {ef_construction})"
        " WHERE project_id = {project} AND subject_id = {subject} AND status = 'active'"
    ).format(
        name=sql.Identifier(name), project=sql.Literal(project_id), subject=sql.Literal(subject_id),
        m=sql.Literal(HNSW_M), ef_construction=sql.Literal(HNSW_EF_CONSTRUCTION),
    )
    with connection.cursor() as cursor:
        cursor.execute("SET maintenance_work_mem = '1GB'")
        cursor.execute(statement.as_string(connection.connection))
        cursor.execute("RESET maintenance_work_mem")
    return name


def scope_graph_exists(*, project_id: str, subject_id: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [scope_graph_name(project_id, subject_id)])
        return cursor.fetchone()[0]


def scope_graph_drop(*, project_id: str, subject_id: str) -> bool:
    """Drop the scope's graph if it has one; True if it had. CONCURRENTLY (writes and reads go on) unless called
    inside a transaction, which CONCURRENTLY refuses: there a plain DROP INDEX locks facts_fact until it commits."""
    name = scope_graph_name(project_id, subject_id)
    exists = scope_graph_exists(project_id=project_id, subject_id=subject_id)
    with connection.cursor() as cursor:
        if exists:
            concurrently = sql.SQL("" if connection.in_atomic_block else "CONCURRENTLY")
            cursor.execute(sql.SQL("DROP INDEX {} IF EXISTS {}").format(concurrently, sql.Identifier(name))
                           .as_string(connection.connection))
    return exists
