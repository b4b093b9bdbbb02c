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


def scope_graph_list() -> list[tuple[str, str, int]]:
    """(name, predicate, bytes) of every scope graph, by name."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT i.relname, pg_get_expr(x.indpred, x.indrelid), pg_relation_size(i.oid)"
                       "  FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid"
                       " WHERE x.indrelid = 'facts_fact'::regclass AND i.relname LIKE %s ORDER BY 1",
                       [SCOPE_GRAPH_PREFIX + "%"])
        return cursor.fetchall()


def scope_graphs_present() -> set[str]:
    """The names of the scope graphs that exist."""
    return {name for name, _, _ in scope_graph_list()}


def scopes_due_a_graph(*, min_facts: int) -> list[tuple[str, str, int]]:
    """(project, subject, active facts) of the scopes holding at least `min_facts` active facts and no graph of
    their own, largest first. One pass over the scope index (facts_fact_scope_recorded), for a nightly job."""
    if min_facts <= 0:
        return []
    with connection.cursor() as cursor:
        cursor.execute("SELECT project_id, subject_id, count(*) FROM facts_fact WHERE status = 'active'"
                       " GROUP BY project_id, subject_id HAVING count(*) >= %s ORDER BY 3 DESC, 1, 2", [min_facts])
        scopes = cursor.fetchall()
    present = scope_graphs_present()
    return [(p, s, n) for p, s, n in scopes if scope_graph_name(p, s) not in present]


def scope_graphs_ensure(*, min_facts: int, dry_run: bool = False) -> list[tuple[str, str, int]]:
    """Give every scope of `min_facts` active facts or more its own graph (settings.HAKI_SCOPE_GRAPH_MIN_FACTS by
    default, docs/performance.md): from that size on, the exact sort of the scope's vectors costs more than a walk
    of a graph of its own. Outside any transaction (CREATE INDEX CONCURRENTLY). A graph is never dropped here:
    a scope that shrinks keeps it until its erasure or `scope_graph drop`. Returns the scopes given one (would
    be, with dry_run)."""
    due = scopes_due_a_graph(min_facts=min_facts)
    if not dry_run:
        for project_id, subject_id, _ in due:
            scope_graph_create(project_id=project_id, subject_id=subject_id)
            # An erasure that ran while the graph was being built may not have seen it, and its definition names
            # the subject: it goes if the scope is gone.
            with connection.cursor() as cursor:
                cursor.execute("SELECT EXISTS (SELECT FROM facts_fact WHERE project_id = %s AND subject_id = %s)",
                               [project_id, subject_id])
                if not cursor.fetchone()[0]:
                    scope_graph_drop(project_id=project_id, subject_id=subject_id)
    return due
