"""The whole-scope statement is prepared on its connection and run by name from then on; no other statement of a
context call is prepared (the two-phase retrieval's generic plan would lose the hnsw index), and none when
HAKI_PREPARED_STATEMENTS is off (a pooler in transaction mode)."""

import pytest
from django.db import connection, transaction

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


def test_a_question_of_stop_words_alone_is_prepared_apart(api):
    """psycopg keys a prepared statement by its parameters' types too: the empty word lists of a question with no
    lexical term have none, so that call prepares the statement a second time, and runs it by name after."""
    FactFactory(text="Marie's sister Anna lives in Lyon.")
    ask(api, "Where does Anna live?")
    for question in ("what is it?", "who is it?"):
        assert ask(api, question)["facts"]
    statements = prepared_statements()
    assert len(statements) == 2 and all("scope_facts" in statement for statement, _ in statements)
    assert sorted(runs for _, runs in statements) == [1, 2]


def test_a_rolled_back_savepoint_keeps_the_prepared_statement(api):
    """The connection counts no statement of Django's: a ROLLBACK TO SAVEPOINT (any failed nested block) leaves the
    prepared statement to the next call."""
    FactFactory(text="Marie's sister Anna lives in Lyon.")
    ask(api, "Where does Anna live?")
    with transaction.atomic():
        FactFactory(text="Marie's brother Paul lives in Nantes.")
        transaction.set_rollback(True)
    ask(api, "Who is Marie's sister?")
    assert [runs for _, runs in prepared_statements()] == [2]


def test_nothing_is_prepared_when_prepared_statements_are_off(api, settings):
    settings.HAKI_PREPARED_STATEMENTS = False
    FactFactory(text="Marie's sister Anna lives in Lyon.")
    assert ask(api, "Where does Anna live?")["facts"]
    assert prepared_statements() == []
