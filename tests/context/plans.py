"""EXPLAIN of the retrieval queries on the benchmark's dataset, for the plan tests."""

from django.db import connection
from django.utils import timezone

from context import retrieval, retrieval_sql
from facts.selectors import volatility_cutoffs
from hakimem.embeddings import get_embedder, vector_literal
from hakimem.rowsecurity import API_ROLE, scope_enter
from bench import dataset, loader

TOTAL = 30_000


def load_30k(cache_dir) -> tuple[dict, str]:
    """Load 30k facts (one scope of 18,000, small ones ~45); returns the scope sizes and a ~45-fact scope."""
    loader.load(TOTAL, "hashing", cache_dir)
    sizes = dict(dataset.subject_sizes(TOTAL))
    small = min((s for s in sizes if s.startswith("s-")), key=lambda s: abs(sizes[s] - 45))
    return sizes, small


def explain(
    subject: str,
    query: str,
    sql: str = retrieval_sql.HYBRID_CANDIDATES_SQL,
    table: str = retrieval.FACTS,
    extra: dict | None = None,
) -> str:
    now = timezone.now()
    lookup = retrieval.lookup_for(
        project_id=dataset.PROJECT, subject_id=subject, query=query, now=now, cutoffs=volatility_cutoffs(now)
    )
    text = {
        retrieval.FACTS: lookup.fact_text,
        retrieval.EVENTS: lookup.event_text,
        retrieval.PROCEDURES: lookup.procedure_text,
    }[table]
    params = {
        **lookup.params(text),
        "qvec": vector_literal(get_embedder().embed_query(query, project_id=lookup.project_id)),
    }
    events = lookup.params(lookup.event_text)  # a plain call's facts and episodes together (retrieval_sql.TOGETHER_SQL)
    params.update({retrieval_sql.EPISODE_TEXT_PREFIX + name: events[name] for name in retrieval_sql.TEXT_PARAMS})
    params.update(extra or {})  # what the statement asks besides the call's own (e.g. the ids of next_turns)
    # As a request runs it: under row-level security, as the API role seeing the key's project (the test's
    # transaction is rolled back, role and project with it).
    scope_enter(API_ROLE, dataset.PROJECT)
    with connection.cursor() as cursor:
        retrieval._settings_for_hnsw(cursor, connection)
        cursor.execute("EXPLAIN (ANALYZE, COSTS OFF) " + sql, params)
        return "\n".join(row[0] for row in cursor.fetchall())
