"""Phase 1 really runs on its indexes at a realistic size: EXPLAIN (ANALYZE) of the retrieval query on
30,000 facts, where one scope holds 18,000 and small ones ~45."""
import pytest
from django.db import connection
from django.utils import timezone

from context import retrieval
from context.scoring import TAU_SECONDS
from facts.selectors import volatility_cutoffs
from hakimem.embeddings import get_embedder, vector_literal
from scripts import bench_data

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def loaded(tmp_path):
    bench_data.load(30_000, "hashing", tmp_path)
    sizes = dict(bench_data.subject_sizes(30_000))
    small = min((s for s in sizes if s.startswith("s-")), key=lambda s: abs(sizes[s] - 45))
    return sizes, small


def _plan(subject: str, query: str) -> str:
    now = timezone.now()
    base = {"project_id": bench_data.PROJECT, "subject_id": subject, "tsq": retrieval.lexical_query(query),
            "now": now, "tau_seconds": TAU_SECONDS, "cutoffs": volatility_cutoffs(now)}
    params = {**retrieval._base_params(**base), "qvec": vector_literal(get_embedder().embed_query(query))}
    with connection.cursor() as cursor:
        retrieval._settings_for_hnsw(cursor)
        cursor.execute("EXPLAIN (ANALYZE, COSTS OFF) " + retrieval.HYBRID_CANDIDATES_SQL, params)
        return "\n".join(row[0] for row in cursor.fetchall())


def test_large_scope_uses_hnsw_and_gin(loaded):
    sizes, _ = loaded
    assert sizes["big"] == 18_000
    plan = _plan("big", bench_data.generate_queries(1, subject_id="big")[0])
    assert "Index Scan using facts_fact_embedding_hnsw" in plan, plan
    assert "facts_fact_search_gin" in plan, plan
    assert "Seq Scan on facts_fact" not in plan, plan


def test_small_scope_sorts_its_few_rows_exactly(loaded):
    _, small = loaded
    plan = _plan(small, bench_data.generate_queries(1, subject_id=small)[0])
    assert "facts_fact_embedding_hnsw" not in plan, plan  # the graph would be walked for a handful of matches
    assert "facts_fact_scope" in plan, plan
    assert "Seq Scan on facts_fact" not in plan, plan
