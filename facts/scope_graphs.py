"""Dedicated hnsw graphs of single large scopes, and full-text indexes of the largest: their naming, which the
context path reads to know which scopes have a graph (context/retrieval.py), and their DDL (`manage.py scope_graph`).
Both are partial indexes whose predicate names the scope: erasure drops them with it.

Kept apart from the store's writes (facts.writes, facts.erasure): naming a scope's graph is a read every layer above may do,
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


# A scope of tens of thousands of facts also gets its own full-text index (scope_text_index_create). The table-wide
# index finds a scope's matches by intersecting its words' posting lists with the scope's lexeme's
# (facts.models.ScopeLexeme), but those lists span every scope: a word common elsewhere and absent from the scope is
# walked all the same. In the scope's own index it costs nothing (docs/tuning.md#large-scopes).
SCOPE_TEXT_INDEX_PREFIX = "facts_fact_scope_gin_"


def scope_text_index_name(project_id: str, subject_id: str) -> str:
    return scope_graph_name(project_id, subject_id).replace(SCOPE_GRAPH_PREFIX, SCOPE_TEXT_INDEX_PREFIX)


def _create_scope_index(name: str, method: sql.Composable, project_id: str, subject_id: str) -> str:
    """CONCURRENTLY (writes go on), unless called inside a transaction, which CONCURRENTLY refuses (a test's)."""
    statement = sql.SQL(
        "CREATE INDEX {concurrently} IF NOT EXISTS {name} ON facts_fact USING {method}"
        " WHERE project_id = {project} AND subject_id = {subject} AND status = 'active'"
    ).format(
        name=sql.Identifier(name),
        method=method,
        project=sql.Literal(project_id),
        subject=sql.Literal(subject_id),
        concurrently=sql.SQL("" if connection.in_atomic_block else "CONCURRENTLY"),
    )
    with connection.cursor() as cursor:
        cursor.execute("SET maintenance_work_mem = '1GB'")
        cursor.execute(statement.as_string(connection.connection))
        cursor.execute("RESET maintenance_work_mem")
    return name


def scope_graph_create(*, project_id: str, subject_id: str) -> str:
    """A dedicated hnsw graph over one scope's active facts: a partial index the planner uses for that scope
    alone (its predicate holds the scope's literal ids), so the dense leg walks no other scope's facts. For
    scopes that are both large and a small share of a large table, where the shared graph, filtered to the
    scope, visits ~DENSE_TOP_K / share tuples (docs/performance.md). Built CONCURRENTLY: writes go on.
    Each such scope pays a second hnsw insert per new fact. Returns the index name."""
    method = sql.SQL("hnsw (embedding halfvec_cosine_ops) WITH (m = {m}, ef_construction = {ef_construction})").format(
        m=sql.Literal(HNSW_M), ef_construction=sql.Literal(HNSW_EF_CONSTRUCTION)
    )
    return _create_scope_index(scope_graph_name(project_id, subject_id), method, project_id, subject_id)


def scope_text_index_create(*, project_id: str, subject_id: str) -> str:
    """A full-text (GIN) index over one scope's active facts, which the planner uses for that scope alone: its
    lexical leg and multi-hop's fetched names then read the scope's matches only. Each one costs every facts
    statement's planner one more predicate to check, so only the largest scopes get one
    (HAKI_SCOPE_TEXT_INDEX_MIN_FACTS). Built CONCURRENTLY. Returns the index name."""
    return _create_scope_index(
        scope_text_index_name(project_id, subject_id), sql.SQL("gin (search_vector)"), project_id, subject_id
    )


def _scope_index_names(project_id: str, subject_id: str) -> tuple[str, str]:
    return scope_graph_name(project_id, subject_id), scope_text_index_name(project_id, subject_id)


def scope_graph_exists(*, project_id: str, subject_id: str) -> bool:
    """Whether the scope has an index of its own (its graph, its full-text index): their definitions name it."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT bool_or(to_regclass(n) IS NOT NULL) FROM unnest(%s::text[]) n",
            [list(_scope_index_names(project_id, subject_id))],
        )
        return bool(cursor.fetchone()[0])


def scope_graph_drop(*, project_id: str, subject_id: str) -> bool:
    """Drop the scope's own indexes (its graph, its full-text index) if it has any; True if it had. CONCURRENTLY
    (writes and reads go on) unless called inside a transaction, which CONCURRENTLY refuses: there a plain DROP INDEX
    locks facts_fact until it commits."""
    exists = scope_graph_exists(project_id=project_id, subject_id=subject_id)
    if exists:
        concurrently = sql.SQL("" if connection.in_atomic_block else "CONCURRENTLY")
        with connection.cursor() as cursor:
            for name in _scope_index_names(project_id, subject_id):
                cursor.execute(
                    sql.SQL("DROP INDEX {} IF EXISTS {}")
                    .format(concurrently, sql.Identifier(name))
                    .as_string(connection.connection)
                )
    return exists


def scope_graph_list(prefix: str = SCOPE_GRAPH_PREFIX) -> list[tuple[str, str, int]]:
    """(name, predicate, bytes) of every scope graph (or, with SCOPE_TEXT_INDEX_PREFIX, full-text index), by name."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT i.relname, pg_get_expr(x.indpred, x.indrelid), pg_relation_size(i.oid)"
            "  FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid"
            " WHERE x.indrelid = 'facts_fact'::regclass AND i.relname LIKE %s ORDER BY 1",
            [prefix + "%"],
        )
        return cursor.fetchall()


# What makes a scope large, per table: its active facts; its events, which have no status.
SCOPE_ITEMS = {"facts_fact": "status = 'active'", "facts_event": "TRUE"}


def large_scopes(*, min_items: int, table: str = "facts_fact") -> list[tuple[str, str, int]]:
    """(project, subject, items) of the scopes holding at least `min_items` items of `table` (SCOPE_ITEMS), largest
    first. One pass over the table's scope index, for a nightly job."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT project_id, subject_id, count(*) FROM {table} WHERE {SCOPE_ITEMS[table]}"
            " GROUP BY project_id, subject_id HAVING count(*) >= %s ORDER BY 3 DESC, 1, 2",
            [min_items],
        )
        return cursor.fetchall()


def scopes_due_a_graph(*, min_facts: int, name=scope_graph_name) -> list[tuple[str, str, int]]:
    """(project, subject, active facts) of the scopes holding at least `min_facts` active facts and no graph of
    their own (no index named `name`), largest first."""
    if min_facts <= 0:
        return []
    scopes = large_scopes(min_items=min_facts)
    with connection.cursor() as cursor:
        cursor.execute("SELECT relname FROM pg_class WHERE relname = ANY(%s)", [[name(p, s) for p, s, _ in scopes]])
        present = {row[0] for row in cursor.fetchall()}
    return [(p, s, n) for p, s, n in scopes if name(p, s) not in present]


def scope_graphs_ensure(*, min_facts: int, dry_run: bool = False) -> list[tuple[str, str, int]]:
    """Give every scope of `min_facts` active facts or more its own graph (settings.HAKI_SCOPE_GRAPH_MIN_FACTS by
    default, docs/performance.md): from that size on, the exact sort of the scope's vectors costs more than a walk
    of a graph of its own. Outside any transaction (CREATE INDEX CONCURRENTLY). A graph is never dropped here:
    a scope that shrinks keeps it until its erasure or `scope_graph drop`. Returns the scopes given one (would
    be, with dry_run)."""
    return _ensure(scopes_due_a_graph(min_facts=min_facts), scope_graph_create, dry_run)


def scope_text_indexes_ensure(*, min_facts: int, dry_run: bool = False) -> list[tuple[str, str, int]]:
    """Give every scope of `min_facts` active facts or more its own full-text index
    (settings.HAKI_SCOPE_TEXT_INDEX_MIN_FACTS by default), as scope_graphs_ensure gives graphs."""
    due = scopes_due_a_graph(min_facts=min_facts, name=scope_text_index_name)
    return _ensure(due, scope_text_index_create, dry_run)


def _ensure(due: list[tuple[str, str, int]], create, dry_run: bool) -> list[tuple[str, str, int]]:
    if not dry_run:
        for project_id, subject_id, _ in due:
            create(project_id=project_id, subject_id=subject_id)
            # An erasure that ran while the index was being built may not have seen it, and its definition names
            # the subject: it goes if the scope is gone.
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT EXISTS (SELECT FROM facts_fact WHERE project_id = %s AND subject_id = %s)",
                    [project_id, subject_id],
                )
                if not cursor.fetchone()[0]:
                    scope_graph_drop(project_id=project_id, subject_id=subject_id)
    return due
