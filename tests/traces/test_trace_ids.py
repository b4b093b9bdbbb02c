"""Trace ids, and reading a trace its call is still writing: a context call's trace is written just after its
response is sent (context/apis.py), under a pending lock on its id that a reader waits on
(traces.selectors.trace_get)."""

import threading
import time
import uuid

import pytest
from django.db import connection
from django.utils import timezone

from tests.conftest import PROJECT, make_client
from traces import selectors
from traces.models import Trace, trace_id_new
from traces.selectors import trace_get
from traces.services import trace_pending_begin, trace_pending_end, trace_record


def _minted_ms(trace_id: uuid.UUID) -> int:
    return trace_id.int >> 80


def test_an_id_is_a_uuid7_holding_the_millisecond_it_was_minted():
    before = time.time_ns() // 1_000_000
    trace_id = trace_id_new()
    after = time.time_ns() // 1_000_000
    assert trace_id.version == 7 and trace_id.variant == uuid.RFC_4122
    assert before <= _minted_ms(trace_id) <= after


def test_ids_sort_in_minting_order_and_never_repeat():
    ids = []
    for _ in range(5):
        ids += [trace_id_new() for _ in range(2000)]
        time.sleep(0.002)  # the next batch is minted in a later millisecond
    assert len(set(ids)) == len(ids)
    minted = [_minted_ms(i) for i in ids]
    assert minted == sorted(minted)
    assert [str(i) for i in ids[::2000]] == sorted(str(i) for i in ids[::2000])


@pytest.mark.django_db
@pytest.mark.parametrize("trace_id", [uuid.uuid4(), trace_id_new()], ids=["random", "minted_now"])
def test_a_trace_nobody_is_writing_answers_at_once(django_assert_num_queries, trace_id):
    # the lookup, the pending lock's probe, the lookup again (a write may have committed in between)
    with django_assert_num_queries(3):
        assert trace_get(project_id=PROJECT, trace_id=trace_id, wait_for_pending=True) is None
    with django_assert_num_queries(1):
        assert trace_get(project_id=PROJECT, trace_id=trace_id) is None


def _record(trace_id) -> None:
    trace_record(
        trace={
            "id": str(trace_id),
            "project_id": PROJECT,
            "subject_id": "alice",
            "query": "Where does Julien live?",
            "budget_tokens": 900,
            "used_tokens": 10,
            "status": "ok",
            "empty_reason": None,
            "warnings": [],
            "rendered": "",
            "facts_served": 0,
            "episodes_served": 0,
            "candidates": 0,
            "embedder": "hashing",
            "timings": {},
            "latency_ms": 5.0,
            "created_at": timezone.now(),
            "replay_of": None,
            "replay": None,
        },
        decisions=[],
    )


class _PollingClock:
    """traces.selectors' clock, saying when the reader first sleeps between two looks at a pending trace."""

    def __init__(self, polling: threading.Event):
        self.polling = polling
        self.monotonic = time.monotonic

    def sleep(self, seconds: float) -> None:
        self.polling.set()
        time.sleep(seconds)


def _inspect_in_thread(trace_id):
    answers = []

    def inspect():
        try:
            answers.append(make_client(PROJECT).get(f"/v1/inspect/{trace_id}"))
        finally:
            connection.close()

    thread = threading.Thread(target=inspect)
    thread.start()
    return thread, answers


@pytest.mark.django_db(transaction=True)
def test_inspecting_a_trace_still_being_written_waits_for_it(monkeypatch):
    # given a call answered, whose trace is pending on this connection (a reader's wait unbounded for the test)
    monkeypatch.setattr(selectors, "TRACE_WRITE_WAIT_SECONDS", 60.0)
    polling = threading.Event()
    monkeypatch.setattr(selectors, "time", _PollingClock(polling))
    trace_id = trace_id_new()
    trace_pending_begin(trace_id)

    # when a client asks for it meanwhile, and the trace is committed once the client is waiting for it
    thread, answers = _inspect_in_thread(trace_id)
    waited = polling.wait(30) and not answers
    _record(trace_id)
    trace_pending_end(trace_id)
    thread.join(timeout=10)

    # then the client had waited for it, and got the trace rather than a 404
    assert waited
    assert answers[0].status_code == 200, answers[0].content
    assert answers[0].json()["trace_id"] == str(trace_id)


@pytest.mark.django_db(transaction=True)
def test_a_write_that_never_comes_is_waited_for_no_longer_than_the_bound(monkeypatch):
    # given a trace pending on this connection that is never written, and a bound of 100 ms
    monkeypatch.setattr(selectors, "TRACE_WRITE_WAIT_SECONDS", 0.1)
    trace_id = trace_id_new()
    trace_pending_begin(trace_id)
    try:
        # when a client asks for it
        thread, answers = _inspect_in_thread(trace_id)
        thread.join(timeout=10)
    finally:
        trace_pending_end(trace_id)

    # then it answered 404 once the bound was reached
    assert not thread.is_alive()
    assert answers[0].status_code == 404
    assert not Trace.objects.filter(id=trace_id).exists()
