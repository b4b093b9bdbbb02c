"""A context call's trace is written after its response is sent, as the API role of the call's project, and a
trace that fails to be written is logged with its id."""

import pytest
from django.db import connection

from tests.conftest import PROJECT
from tests.context.calls import ask
from tests.facts.factories import FactFactory
from traces.models import Trace

pytestmark = pytest.mark.django_db


def _served_by_wsgi(api, body: dict):
    """POST /v1/context as a WSGI server serves it (gunicorn): the application's response, its body read, not yet
    closed. Django's connection-closing signal handlers are held off, as its test client does, so the call stays
    inside the test's transaction."""
    import io
    import json

    from django.core import signals
    from django.core.handlers.wsgi import WSGIHandler
    from django.db import close_old_connections

    payload = json.dumps(body).encode()
    environ = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": "/v1/context",
        "SCRIPT_NAME": "",
        "QUERY_STRING": "",
        "SERVER_NAME": "testserver",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(payload),
        "wsgi.errors": io.StringIO(),
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(payload)),
        "HTTP_AUTHORIZATION": f"Bearer {api.raw_key}",
    }
    statuses = []
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        response = WSGIHandler()(environ, lambda status, headers, exc_info=None: statuses.append(status))
        sent = b"".join(response)
        return statuses[0], json.loads(sent), response
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


def test_the_trace_is_written_once_the_response_is_sent(api):
    # given a scope with facts
    FactFactory(text="Alice's friend Julien lives in Lyon.")
    from django.core import signals
    from django.db import close_old_connections

    # when a WSGI server has sent a context call's whole response
    status, packet, response = _served_by_wsgi(
        api, {"project_id": PROJECT, "subject_id": "alice", "query": "Where does Julien live?"}
    )

    # then the answer was complete before its trace was written, with the trace's pending lock held for readers to
    # wait on; closing the response writes it and lets the lock go
    assert status.startswith("200") and packet["facts"][0]["text"] == "Alice's friend Julien lives in Lyon."
    assert not Trace.objects.filter(id=packet["trace_id"]).exists()
    assert _pending_elsewhere(packet["trace_id"])
    signals.request_finished.disconnect(close_old_connections)
    try:
        response.close()
    finally:
        signals.request_finished.connect(close_old_connections)
    trace = Trace.objects.get(id=packet["trace_id"])
    assert trace.facts_served == 1 and trace.decisions.filter(reason_code="included").count() == 1
    assert not _pending_elsewhere(packet["trace_id"])


def _pending_elsewhere(trace_id) -> bool:
    """Whether another connection sees the trace's pending lock held."""
    import threading

    from traces.selectors import _PENDING_SQL

    seen = []

    def probe():
        try:
            with connection.cursor() as cursor:
                cursor.execute(_PENDING_SQL, {"trace_id": str(trace_id)})
                seen.append(cursor.fetchone()[0])
        finally:
            connection.close()

    thread = threading.Thread(target=probe)
    thread.start()
    thread.join(timeout=10)
    return seen == [True]


def test_the_trace_is_written_as_the_api_role_of_the_calls_project(api, monkeypatch):
    # given a trace writer that notes the role and project its transaction runs as
    import context.assembler
    from traces.services import trace_record

    FactFactory(text="Alice's friend Julien lives in Lyon.")
    seen = []

    def noting(**kwargs):
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_user, current_setting('hakimem.project_id', true)")
            seen.append(cursor.fetchone())
        return trace_record(**kwargs)

    monkeypatch.setattr(context.assembler, "trace_record", noting)

    # when a call is answered
    packet = ask(api, "Where does Julien live?")

    # then its trace was written under row security, as the API role seeing the call's project only
    assert seen == [("hakimem_api", PROJECT)]
    assert Trace.objects.filter(id=packet["trace_id"]).exists()


def test_a_trace_that_fails_to_be_written_after_the_answer_is_logged_with_its_id(api, monkeypatch, caplog):
    # given a trace writer that fails (a database gone after the answer was computed)
    import context.assembler
    from django.db import OperationalError

    def failing(**kwargs):
        raise OperationalError("the server closed the connection")

    monkeypatch.setattr(context.assembler, "trace_record", failing)
    FactFactory(text="Alice's friend Julien lives in Lyon.")

    # when a call is answered
    packet = ask(api, "Where does Julien live?")

    # then the client had its packet, and the log names the trace that is missing, without the query's text
    assert packet["facts"]
    failures = [r.getMessage() for r in caplog.records if "not written" in r.getMessage()]
    assert failures == [f"trace {packet['trace_id']} not written after its response: OperationalError"]
    assert not Trace.objects.filter(id=packet["trace_id"]).exists()
