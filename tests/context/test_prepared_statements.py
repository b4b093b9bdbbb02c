"""The whole-scope statement is prepared on its connection and run by name from then on; no other statement of a
context call is prepared (the two-phase retrieval's generic plan would lose the hnsw index)."""

import pytest
from django.db import connection

from tests.context.calls import ask
from tests.facts.factories import EventFactory, FactFactory

pytestmark = pytest.mark.django_db


def prepared_statements():
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement, generic_plans + custom_plans FROM pg_prepared_statements")
        return cursor.fetchall()


def test_the_whole_scope_statement_is_prepared_once_and_run_by_name(api):
    FactFactory(text="Marie's sister Anna lives in Lyon.")
    EventFactory(text="Marie visited Anna in Lyon.")
    before = {statement: runs for statement, runs in prepared_statements()}
    packets = [ask(api, question) for question in ("Where does Anna live?", "Who is Marie's sister?", "Lyon?")]
    assert all(packet["facts"] for packet in packets)
    after = prepared_statements()
    assert len(after) == 1, [statement[:80] for statement, _ in after]
    statement, runs = after[0]
    assert "scope_facts" in statement
    assert runs - before.get(statement, 0) == 3


def test_a_question_of_stop_words_alone_runs_the_prepared_statement(api):
    FactFactory(text="Marie's sister Anna lives in Lyon.")
    ask(api, "Where does Anna live?")
    # no lexical term: the statement's text parameters are empty, the same prepared statement serves
    packet = ask(api, "what is it?")
    assert packet["facts"]
    assert [statement for statement, _ in prepared_statements() if "scope_facts" in statement]
