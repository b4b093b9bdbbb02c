"""A context call's round trips to the database are a fixed number: one more only when multi-hop needs its own
statement."""

import pytest

from tests.conftest import REQUEST_OVERHEAD_QUERIES, TRACE_TRANSACTION_QUERIES
from tests.context.calls import ask
from tests.facts.factories import EventFactory, FactFactory

pytestmark = pytest.mark.django_db


def test_one_context_call_is_a_fixed_number_of_queries(api, django_assert_num_queries):
    for i in range(20):
        FactFactory(text=f"Marie's friend number {i} is called Julien.")
    EventFactory(text="Marie met Julien.")
    ask(api, "Who are Marie's friends?")  # warms the connection (its hnsw settings are set once)
    # the statistics' version (context.retrieval.table_stats_refresh), the consent gate (the project's flag; no
    # consent row unless it requires them), the facts and episodes together, trace + decisions; multi-hop asks
    # nothing, every fact of the scope being served already
    with django_assert_num_queries(4 + REQUEST_OVERHEAD_QUERIES + TRACE_TRANSACTION_QUERIES):
        ask(api, "Who are Marie's friends?")
    for i in range(150):  # more facts than a call's candidates: multi-hop has its statement
        FactFactory(text=f"Marie wrote note {i} about her friend Sophie in the family diary.")
    ask(api, "Who are Marie's friends?")
    with django_assert_num_queries(5 + REQUEST_OVERHEAD_QUERIES + TRACE_TRANSACTION_QUERIES):
        ask(api, "Who are Marie's friends?")
