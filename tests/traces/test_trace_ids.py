"""Trace ids say when they were minted (traces.models.trace_id_new), so that a reader of a trace written just
after its call's response (context/apis.py) can wait for a recent one and answer an unknown one at once."""
import threading
import time
import uuid

import pytest
from django.db import connection
from django.utils import timezone

import traces.models
from tests.conftest import PROJECT, make_client
from traces import selectors
from traces.models import Trace, trace_id_minted_at, trace_id_new
from traces.selectors import trace_get
from traces.services import trace_record


def test_an_id_is_a_uuid7_holding_the_millisecond_it_was_minted():
    before = time.time()
    trace_id = trace_id_new()
    after = time.time()
    assert trace_id.version == 7 and trace_id.variant == uuid.RFC_4122
    assert before - 0.001 <= trace_id_minted_at(trace_id) <= after


def test_ids_sort_in_minting_order_and_never_repeat():
    ids = []
    for _ in range(5):
        ids += [trace_id_new() for _ in range(2000)]
        time.sleep(0.002)  # the next batch is minted in a later millisecond
    assert len(set(ids)) == len(ids)
    minted = [trace_id_minted_at(i) for i in ids]
    assert minted == sorted(minted)
    assert [str(i) for i in ids[::2000]] == sorted(str(i) for i in ids[::2000])


def test_a_random_id_has_no_minting_time():
    assert trace_id_minted_at(uuid.uuid4()) is None


def _minted_at(monkeypatch, seconds_ago: float) -> uuid.UUID:
    minted = time.time_ns() - int(seconds_ago * 1e9)
    monkeypatch.setattr(traces.models.time, "time_ns", lambda: minted)
    trace_id = trace_id_new()
    monkeypatch.undo()
    return trace_id


@pytest.mark.django_db
@pytest.mark.parametrize("kind", ["random", "minted_long_ago", "not_asked_to_wait"])
def test_a_missing_trace_answers_at_once_unless_its_id_is_recent(monkeypatch, django_assert_num_queries, kind):
    trace_id = {"random": uuid.uuid4(), "minted_long_ago": _minted_at(monkeypatch, 60),
                "not_asked_to_wait": trace_id_new()}[kind]
    with django_assert_num_queries(1):
        assert trace_get(project_id=PROJECT, trace_id=trace_id, wait_for_recent=kind != "not_asked_to_wait") is None


@pytest.mark.django_db
def test_an_id_claiming_a_later_time_waits_no_longer_than_the_grace(monkeypatch):
    # given an id forged to claim the year 2100, and a grace of 50 ms
    monkeypatch.setattr(traces.models.time, "time_ns", lambda: 4_102_444_800 * 10**9)
    forged = trace_id_new()
    monkeypatch.undo()
    monkeypatch.setattr(selectors, "TRACE_WRITE_GRACE_SECONDS", 0.05)

    # when it is looked for on a thread of its own
    answers = []

    def look():
        try:
            answers.append(trace_get(project_id=PROJECT, trace_id=forged, wait_for_recent=True))
        finally:
            connection.close()

    lookup = threading.Thread(target=look)
    lookup.start()
    lookup.join(timeout=10)

    # then it answered None within the grace rather than waiting until 2100
    assert not lookup.is_alive() and answers == [None]


@pytest.mark.django_db(transaction=True)
def test_inspecting_a_trace_written_just_after_the_ask_finds_it():
    # given an id minted now, whose trace another connection writes 150 ms later
    trace_id = trace_id_new()

    def write_later():
        time.sleep(0.15)
        try:
            trace_record(trace={
                "id": str(trace_id), "project_id": PROJECT, "subject_id": "alice", "query": "Where does Julien live?",
                "budget_tokens": 900, "used_tokens": 10, "status": "ok", "empty_reason": None, "warnings": [],
                "rendered": "", "facts_served": 0, "episodes_served": 0, "candidates": 0, "embedder": "hashing",
                "timings": {}, "latency_ms": 5.0, "created_at": timezone.now(), "replay_of": None, "replay": None,
            }, decisions=[])
        finally:
            connection.close()

    writer = threading.Thread(target=write_later)
    writer.start()

    # when a client asks for it at once
    response = make_client(PROJECT).get(f"/v1/inspect/{trace_id}")
    writer.join(timeout=10)

    # then it was answered with the trace, not a 404
    assert response.status_code == 200, response.content
    assert response.json()["trace_id"] == str(trace_id)
    assert Trace.objects.filter(id=trace_id).exists()
