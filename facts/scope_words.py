"""A large scope's own word counts (facts.models.ScopeWordCounts, ScopeWord): how many of its items hold each of
its commoner words, what the context call's lexical leg and multi-hop judge a word by in that scope."""

from __future__ import annotations

from django.db import connection, transaction
from psycopg import sql

from facts.locks import lock_scopes
from facts.scope_graphs import SCOPE_ITEMS, large_scopes


# Words held by at least max(SCOPE_WORDS_MIN_COUNT, items / 1,000) items are listed, at most SCOPE_WORDS_MAX of them
# (the commonest): what the context call's choices turn on are words of hundreds of matches (context/retrieval.py).
SCOPE_WORDS_MIN_COUNT = 10
SCOPE_WORDS_MAX = 2000

# ts_stat runs the query it is given: the scope's ids are quoted into it as literals by psycopg (sql.Literal). A word
# not listed is held by fewer than min_count items or, when the list was cut, by at most as many as the least
# common word listed.
_COUNT_WORDS_SQL = """
WITH listed AS (SELECT word, ndoc FROM ts_stat(%(items_query)s)
                 WHERE ndoc >= %(min_count)s AND word <> hakimem_scope_lexeme(%(p)s, %(s)s)
                 ORDER BY ndoc DESC, word LIMIT %(max_words)s + 1),
     kept AS (SELECT word, ndoc FROM listed ORDER BY ndoc DESC, word LIMIT %(max_words)s),
     scope AS (INSERT INTO facts_scopewordcounts AS c (project_id, subject_id, items_table, items, unlisted_max, counted_at)
               SELECT %(p)s, %(s)s, %(table)s, %(items)s,
                      CASE WHEN (SELECT count(*) FROM listed) > %(max_words)s THEN (SELECT min(ndoc) FROM kept)
                           ELSE %(min_count)s - 1 END, now()
               ON CONFLICT (project_id, subject_id, items_table) DO UPDATE SET items = EXCLUDED.items,
                  unlisted_max = EXCLUDED.unlisted_max, counted_at = EXCLUDED.counted_at)
INSERT INTO facts_scopeword (project_id, subject_id, items_table, word, items)
SELECT %(p)s, %(s)s, %(table)s, word, ndoc FROM kept"""

_SCOPE_WORDS_DELETE = """
DELETE FROM facts_scopeword WHERE project_id = %(p)s AND subject_id = %(s)s AND items_table = %(table)s;
DELETE FROM facts_scopewordcounts WHERE project_id = %(p)s AND subject_id = %(s)s AND items_table = %(table)s"""


def scope_words_count(*, project_id: str, subject_id: str, table: str = "facts_fact") -> int | None:
    """Count again how many of the scope's items (active facts, or events) hold each of its commoner words, and
    store it (facts.models.ScopeWordCounts, ScopeWord); the counts go when the scope holds no item. Under the scope's
    writers' lock, which erasure holds too: an erased scope's words are never written back. Returns the items
    counted."""
    items = SCOPE_ITEMS[table]
    scope = {"p": project_id, "s": subject_id, "table": table}
    with transaction.atomic():
        lock_scopes([(project_id, subject_id)])
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT count(*) FROM {table} WHERE project_id = %(p)s AND subject_id = %(s)s AND {items}", scope
            )
            total = cursor.fetchone()[0]
            cursor.execute(_SCOPE_WORDS_DELETE, scope)
            if not total:
                return None
            items_query = sql.SQL(
                "SELECT search_vector FROM {} WHERE project_id = {} AND subject_id = {} AND {}"
            ).format(sql.Identifier(table), sql.Literal(project_id), sql.Literal(subject_id), sql.SQL(items))
            cursor.execute(
                _COUNT_WORDS_SQL,
                {
                    **scope,
                    "items": total,
                    "items_query": items_query.as_string(connection.connection),
                    "min_count": max(SCOPE_WORDS_MIN_COUNT, total // 1000),
                    "max_words": SCOPE_WORDS_MAX,
                },
            )
    return total


def scope_words_refresh(*, min_items: int) -> int:
    """Count the words of every scope of `min_items` active facts (or events) or more again
    (settings.HAKI_SCOPE_WORDS_MIN_ITEMS: the nightly consolidation), each scope in a transaction of its own, and
    delete the counts of scopes grown smaller. Returns the scopes counted (a scope's facts and events count once
    each)."""
    if min_items <= 0:
        return 0
    counted = 0
    for table in SCOPE_ITEMS:
        large = [(p, s) for p, s, _ in large_scopes(min_items=min_items, table=table)]
        for project_id, subject_id in large:
            counted += scope_words_count(project_id=project_id, subject_id=subject_id, table=table) is not None
        with connection.cursor() as cursor:
            cursor.execute("SELECT project_id, subject_id FROM facts_scopewordcounts WHERE items_table = %s", [table])
            shrunk = set(cursor.fetchall()) - set(large)
        for project_id, subject_id in sorted(shrunk):
            with transaction.atomic():
                lock_scopes([(project_id, subject_id)])
                with connection.cursor() as cursor:
                    cursor.execute(_SCOPE_WORDS_DELETE, {"p": project_id, "s": subject_id, "table": table})
    return counted
