"""A very large scope can get its own hnsw graph (manage.py scope_graph), and the dense leg then walks it.
Apart from test_retrieval_plans.py: CREATE INDEX CONCURRENTLY runs outside a transaction, so this test is
transactional and empties the tables after it, where those tests share one load."""

import pytest
from django.core.management import call_command
from django.db import connection

from context import retrieval
from facts.scope_graphs import scope_graph_name
from bench import dataset
from tests.context.plans import explain, load_30k

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_large_scope_can_get_its_own_graph(tmp_path):
    load_30k(tmp_path)
    name = scope_graph_name(dataset.PROJECT, "mid-0")
    call_command("scope_graph", "create", "--project", dataset.PROJECT, "--subject", "mid-0")
    try:
        retrieval.table_stats_refresh()
        stats = retrieval.table_stats()
        assert name in stats.scope_graphs
        assert not stats.dense_exact(dataset.PROJECT, "mid-0")
        assert stats.dense_exact(dataset.PROJECT + "-other", "mid-0")  # the graph is that project's only
        plan = explain("mid-0", dataset.generate_queries(1, subject_id="mid-0")[0])
        assert f"Index Scan using {name}" in plan, plan
    finally:
        call_command("scope_graph", "drop", "--project", dataset.PROJECT, "--subject", "mid-0")
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s)", [name])
        assert cursor.fetchone()[0] is None
