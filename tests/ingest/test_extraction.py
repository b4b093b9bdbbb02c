"""Fact extraction from events, end to end: an event written through the API, the job on the procrastinate
queue, the worker, a fake OpenAI-compatible chat-completions server on loopback, the write path, and
GET /v1/events/{id}. Every test runs on committed data (the worker has its own connections)."""

from __future__ import annotations

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.db import connection

from ingest.management.commands.extraction_worker import run_worker
from facts.models import Event, Fact
from ingest.tasks import QUEUE
from tests.conftest import PROJECT, make_client

SUBJECT = "alice"


class FakeChatServer:
    """An OpenAI-compatible /v1/chat/completions on 127.0.0.1. `script` maps a marker found in the request's
    text to a list of answers, one per call (the last repeats): a list of items (sent as the message's JSON
    content), a raw string content, ("status", code), ("held", answer) sent only once the test calls release()
    (or 30 s on), ("trickle",) headers at once then a byte every 0.2 s until release() (or 30 s on), or ("drop",)
    to close the connection without answering. `answered` counts the held answers sent, `trickled` the trickles
    that went their whole 30 s."""

    def __init__(self):
        self.script: dict[str, list] = {}
        self.calls: dict[str, int] = {}
        self.requests: list[dict] = []
        self.released = threading.Event()
        self.answered = 0
        self.trickled = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
                prompt = body["messages"][-1]["content"]
                marker = next((m for m in server.script if m in prompt), None)
                if marker is None:
                    return self._send(200, [])
                n = server.calls.get(marker, 0)
                server.calls[marker] = n + 1
                answers = server.script[marker]
                answer = answers[min(n, len(answers) - 1)]
                if isinstance(answer, tuple) and answer[0] == "held":
                    server.released.wait(30)
                    server.answered += 1
                    answer = answer[1]
                if isinstance(answer, tuple) and answer[0] == "trickle":  # headers at once, then a byte at a time
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", "1000")
                    self.end_headers()
                    try:
                        for _ in range(150):
                            if server.released.wait(0.2):
                                break
                            self.wfile.write(b" ")
                            self.wfile.flush()
                        else:
                            server.trickled += 1
                    except (BrokenPipeError, ConnectionResetError):
                        pass  # the client gave up (its timeout)
                    return None
                if isinstance(answer, tuple) and answer[0] == "drop":
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return None
                if isinstance(answer, tuple) and answer[0] == "status":
                    return self._send_raw(answer[1], b'{"error": "unavailable"}')
                return self._send(200, answer)

            def _send(self, status, answer):
                content = answer if isinstance(answer, str) else json.dumps(answer)
                payload = {
                    "id": "x",
                    "object": "chat.completion",
                    "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
                    ],
                }
                self._send_raw(status, json.dumps(payload).encode())

            def _send_raw(self, status, data: bytes):
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (its timeout)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1/chat/completions"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def release(self):
        self.released.set()

    def close(self):
        self.release()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def fake_llm():
    server = FakeChatServer()
    yield server
    server.close()


@pytest.fixture
def extractor(settings, fake_llm):
    settings.HAKI_EXTRACTOR_URL = fake_llm.url
    settings.HAKI_EXTRACTOR_MODEL = "fake-small"
    settings.HAKI_EXTRACTOR_API_KEY = "sk-test"
    settings.HAKI_EXTRACTOR_TIMEOUT = 1.0
    settings.HAKI_EXTRACTOR_RETRY_WAIT = 0
    return fake_llm


@pytest.fixture
def client(transactional_db):
    return make_client(PROJECT)


def write_event(client, text: str) -> dict:
    response = client.post(
        "/v1/events",
        {"project_id": PROJECT, "subject_id": SUBJECT, "text": text, "occurred_at": "2026-05-01T10:00:00+00:00"},
        format="json",
    )
    assert response.status_code == 201, response.content
    return response.json()


def extraction_of(client, event_id: str) -> dict:
    response = client.get(f"/v1/events/{event_id}")
    assert response.status_code == 200, response.content
    return response.json()["extraction"]


def fact(text, category="", confidence=0.9):
    return {"text": text, "category": category, "confidence": confidence}


def test_good_answer_writes_the_facts_through_the_write_path(client, extractor):
    # given the model extracts two facts from an event
    extractor.script["case-good"] = [[fact("Alice has a daughter named Claire."), fact("Alice lives in Lyon.")]]
    # when the event is written, then the write answers at once with the extraction pending
    event = write_event(client, "case-good: my daughter Claire came to see me in Lyon yesterday")
    assert event["extraction"] == {"status": "pending", "attempts": 0, "error": None, "fact_ids": []}
    assert extractor.requests == []
    # when the worker runs
    run_worker(once=True)
    # then the event shows the facts it produced, stored with the event as their source
    out = extraction_of(client, event["id"])
    assert out["status"] == "done" and out["attempts"] == 1 and out["error"] is None
    facts = Fact.objects.filter(id__in=out["fact_ids"])
    assert sorted(f.text for f in facts) == ["Alice has a daughter named Claire.", "Alice lives in Lyon."]
    assert {str(f.source_event_id) for f in facts} == {event["id"]}
    # and the model was asked with the configured model and key
    request = extractor.requests[0]
    assert request["body"]["model"] == "fake-small" and request["auth"] == "Bearer sk-test"
    # and the facts are served by a context call
    packet = client.post(
        "/v1/context",
        {"project_id": PROJECT, "subject_id": SUBJECT, "query": "Where does Alice live?", "budget_tokens": 300},
        format="json",
    ).json()
    assert "Alice lives in Lyon." in [f["text"] for f in packet["facts"]]


def test_invalid_items_are_dropped_alone_and_never_logged_with_text(client, extractor, caplog):
    # given a project with a category list, and a model answer mixing valid and invalid items
    assert client.patch("/v1/project", {"categories": ["family", "health"]}, format="json").status_code == 200
    extractor.script["case-mixed"] = [
        [
            fact("Alice's daughter is named Claire.", "family"),
            fact("Alice loves opera.", "hobbies"),  # not one of the project's categories
            {"text": "Alice is 81.", "category": "family", "confidence": 0.9, "source": "x"},  # an extra key
            fact("Alice takes insulin.", "health", 1.5),  # confidence out of range
            fact("Alice takes insulin daily.", "health", True),  # a boolean is not a number
            "Alice likes tea",  # not an object
            fact("", "health"),  # empty text
        ]
    ]
    event = write_event(client, "case-mixed: a secret sentence that must never reach the logs")
    # when the worker runs
    with caplog.at_level(logging.INFO):
        run_worker(once=True)
    # then only the valid item is written, and each invalid one was warned about by position, not text
    out = extraction_of(client, event["id"])
    assert out["status"] == "done"
    assert [Fact.objects.get(id=i).text for i in out["fact_ids"]] == ["Alice's daughter is named Claire."]
    warnings = [
        r.getMessage() for r in caplog.records if r.name == "hakimem.extraction" and r.levelno == logging.WARNING
    ]
    assert len(warnings) == 6
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert "secret sentence" not in logged and "Claire" not in logged and "opera" not in logged


def test_low_confidence_and_copied_items_are_dropped(client, extractor):
    sentence = "I have been taking the blue pills every morning since the doctor told me to"
    extractor.script["case-copy"] = [
        [
            fact("Alice takes blue pills every morning on her doctor's advice.", confidence=0.6),  # at the floor: kept
            fact("Alice may own a cat.", confidence=0.59),  # below 0.6: dropped
            fact(sentence),  # 50+ characters copied verbatim from the event: dropped
            fact("the blue pills", confidence=0.9),  # a short verbatim span (< 50) is not a copy
        ]
    ]
    event = write_event(client, f"case-copy: {sentence}.  Anyway.")
    run_worker(once=True)
    out = extraction_of(client, event["id"])
    assert out["status"] == "done"
    assert sorted(Fact.objects.get(id=i).text for i in out["fact_ids"]) == [
        "Alice takes blue pills every morning on her doctor's advice.",
        "the blue pills",
    ]


def test_a_copy_is_found_across_whitespace_differences(client, extractor):
    sentence = "my   grandson\nMathieu starts university in Grenoble this September"
    extractor.script["case-ws"] = [[fact("my grandson Mathieu starts university in Grenoble this September")]]
    event = write_event(client, f"case-ws: {sentence}")
    run_worker(once=True)
    assert extraction_of(client, event["id"]) == {"status": "done", "attempts": 1, "error": None, "fact_ids": []}


@pytest.mark.parametrize("content", ["Sure! Here are the facts: Alice lives in Lyon.", '{"text": "Alice"}', "null"])
def test_an_answer_that_is_not_a_list_fails_without_retry(client, extractor, content):
    extractor.script["case-malformed"] = [content]
    event = write_event(client, "case-malformed: something happened")
    run_worker(once=True)
    assert extraction_of(client, event["id"]) == {
        "status": "failed",
        "attempts": 1,
        "error": "invalid_output",
        "fact_ids": [],
    }
    assert Fact.objects.count() == 0


def test_a_fenced_json_answer_or_a_facts_object_is_read(client, extractor):
    extractor.script["case-fenced"] = [
        '```json\n[{"text": "Alice plays chess.", "category": "", "confidence": 0.8}]\n```'
    ]
    extractor.script["case-object"] = [{"facts": [fact("Alice plays the piano.")]}]
    first, second = write_event(client, "case-fenced: chess"), write_event(client, "case-object: piano")
    run_worker(once=True)
    assert len(extraction_of(client, first["id"])["fact_ids"]) == 1
    assert len(extraction_of(client, second["id"])["fact_ids"]) == 1


def test_a_slow_model_times_out_once_and_is_not_retried(client, extractor):
    # given a model that answers only once the test lets it, past the per-attempt timeout (1 s)
    extractor.script["case-slow"] = [("held", [fact("Alice is slow to answer.")])]
    event = write_event(client, "case-slow: hello")
    run_worker(once=True)
    # then the worker was done before the answer was sent: one call only, cut at the timeout, the event failed
    assert extractor.answered == 0
    extractor.release()
    assert extraction_of(client, event["id"]) == {"status": "failed", "attempts": 1, "error": "timeout", "fact_ids": []}
    assert extractor.calls["case-slow"] == 1


def test_a_trickling_answer_is_cut_at_the_timeout(client, extractor):
    # given a model that sends its answer a byte every 0.2 s, each read within the 1 s timeout, until the test
    # stops it
    extractor.script["case-trickle"] = [("trickle",)]
    event = write_event(client, "case-trickle: hello")
    run_worker(once=True)
    # then the worker was done while the answer still trickled: the call is cut once the timeout has passed,
    # not when the answer ends, and is not retried
    assert extractor.trickled == 0
    extractor.release()
    assert extraction_of(client, event["id"]) == {"status": "failed", "attempts": 1, "error": "timeout", "fact_ids": []}
    assert extractor.calls["case-trickle"] == 1


def test_an_oversized_answer_is_invalid(client, extractor):
    extractor.script["case-huge"] = [[fact("Alice " + "x" * 7000)] * 200]
    event = write_event(client, "case-huge: hello")
    run_worker(once=True)
    assert extraction_of(client, event["id"]) == {
        "status": "failed",
        "attempts": 1,
        "error": "invalid_output",
        "fact_ids": [],
    }


def test_a_transport_error_is_retried_once_at_once(client, extractor):
    # given a model that answers 503 once, then well
    extractor.script["case-503"] = [("status", 503), [fact("Alice plays bridge on Tuesdays.")]]
    event = write_event(client, "case-503: bridge club")
    run_worker(once=True)
    out = extraction_of(client, event["id"])
    assert out["status"] == "done" and out["attempts"] == 2 and len(out["fact_ids"]) == 1


def test_a_client_error_is_not_retried(client, extractor):
    extractor.script["case-401"] = [("status", 401)]
    event = write_event(client, "case-401: anything")
    run_worker(once=True)
    assert extraction_of(client, event["id"]) == {
        "status": "failed",
        "attempts": 1,
        "error": "http_error",
        "fact_ids": [],
    }


def test_the_queue_runs_a_job_again_after_transport_errors(client, extractor):
    # given a model whose connection drops on the first two calls (the first run and its immediate retry)
    extractor.script["case-queue"] = [("drop",), ("drop",), [fact("Alice sings in a choir.")]]
    event = write_event(client, "case-queue: choir")
    # when the worker runs (the job is retried by the queue after HAKI_EXTRACTOR_RETRY_WAIT, 0 here)
    run_worker(once=True)
    # then the second run of the job succeeded, after three calls in all
    out = extraction_of(client, event["id"])
    assert out["status"] == "done" and out["attempts"] == 3 and len(out["fact_ids"]) == 1
    assert _jobs() == {}  # succeeded jobs are deleted


def test_the_queue_gives_up_after_three_runs(client, extractor):
    extractor.script["case-down"] = [("status", 502)]
    event = write_event(client, "case-down: anything")
    run_worker(once=True)
    assert extraction_of(client, event["id"]) == {
        "status": "failed",
        "attempts": 6,
        "error": "transport_error",
        "fact_ids": [],
    }
    assert _jobs() == {}  # the last run records the failure on the event and ends the job


def test_a_refused_connection_is_a_transport_error(client, settings):
    settings.HAKI_EXTRACTOR_URL = "http://127.0.0.1:9/v1/chat/completions"  # nothing listens on the discard port
    settings.HAKI_EXTRACTOR_TIMEOUT = 1.0
    settings.HAKI_EXTRACTOR_RETRY_WAIT = 0
    event = write_event(client, "nobody answers")
    run_worker(once=True)
    assert extraction_of(client, event["id"])["error"] == "transport_error"


def test_a_write_path_failure_marks_the_event_failed(client, extractor, settings):
    # given an event queued, then the embedder down when the worker writes its facts
    extractor.script["case-embed"] = [[fact("Alice paints watercolours.")]]
    event = write_event(client, "case-embed: painting")
    settings.HAKI_EMBED_PROVIDER, settings.HAKI_EMBED_URL = "openai", "http://127.0.0.1:9/v1/embeddings"
    run_worker(once=True)
    # then the event does not stay pending
    assert extraction_of(client, event["id"]) == {
        "status": "failed",
        "attempts": 1,
        "error": "write_failed",
        "fact_ids": [],
    }


def test_a_fact_already_stored_is_answered_by_the_stored_one(client, extractor):
    # given a fact the application wrote itself
    stored = client.post(
        "/v1/facts", {"project_id": PROJECT, "subject_id": SUBJECT, "text": "Alice lives in Lyon."}, format="json"
    ).json()
    extractor.script["case-dup"] = [[fact("Alice lives in Lyon."), fact("Alice lives in Lyon.")]]
    event = write_event(client, "case-dup: Lyon again")
    run_worker(once=True)
    # then the extraction names the stored fact and writes no copy
    assert extraction_of(client, event["id"])["fact_ids"] == [stored["id"]]
    assert Fact.objects.filter(text="Alice lives in Lyon.").count() == 1


def test_consent_limits_what_is_extracted_and_no_consent_sends_nothing(client, extractor):
    # given a project requiring consent, refusing writes without it, and a subject consenting to health only
    assert (
        client.patch(
            "/v1/project", {"consent_required": True, "categories": ["family", "health"]}, format="json"
        ).status_code
        == 200
    )
    extractor.script["case-consent"] = [
        [fact("Alice takes insulin.", "health"), fact("Alice's son is Paul.", "family")]
    ]
    other = write_event(client, "case-consent: before any consent")
    run_worker(once=True)
    # then without any consent the event's text was never sent, and the extraction is skipped
    assert extraction_of(client, other["id"]) == {
        "status": "skipped",
        "attempts": 0,
        "error": "no_consent",
        "fact_ids": [],
    }
    assert extractor.requests == []
    assert (
        client.post(
            f"/v1/subjects/{SUBJECT}/consents", {"project_id": PROJECT, "category": "health"}, format="json"
        ).status_code
        == 201
    )
    event = write_event(client, "case-consent: insulin and Paul")
    run_worker(once=True)
    # then only the consented category is written, and the model was told only that category
    out = extraction_of(client, event["id"])
    assert out["status"] == "done"
    assert [Fact.objects.get(id=i).text for i in out["fact_ids"]] == ["Alice takes insulin."]
    assert "Allowed categories: health\n" in extractor.requests[-1]["body"]["messages"][-1]["content"]


def test_extraction_off_queues_nothing(client, settings):
    # given no HAKI_EXTRACTOR_URL (the default)
    settings.HAKI_EXTRACTOR_URL = ""
    event = write_event(client, "nothing to extract")
    # then the event carries no extraction and nothing is queued
    assert event["extraction"] is None and extraction_of(client, event["id"]) is None
    assert _jobs() == {}


def test_an_event_queued_then_extraction_switched_off_is_skipped(client, extractor, settings):
    event = write_event(client, "queued while on")
    settings.HAKI_EXTRACTOR_URL = ""
    run_worker(once=True)
    assert extraction_of(client, event["id"]) == {
        "status": "skipped",
        "attempts": 0,
        "error": "extractor_off",
        "fact_ids": [],
    }


def test_a_queue_failure_never_fails_the_event_write(client, extractor):
    # given the queue's table cannot take jobs
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE procrastinate_jobs ADD CONSTRAINT no_jobs CHECK (false) NOT VALID")
    try:
        # when an event is written, then it is stored, its extraction marked failed
        event = write_event(client, "queue broken")
    finally:
        with connection.cursor() as cursor:
            cursor.execute("ALTER TABLE procrastinate_jobs DROP CONSTRAINT no_jobs")
    assert Event.objects.filter(id=event["id"]).exists()
    assert extraction_of(client, event["id"]) == {
        "status": "failed",
        "attempts": 0,
        "error": "enqueue_failed",
        "fact_ids": [],
    }


def test_an_event_of_another_project_is_not_found(client, extractor, other_key):
    event = write_event(client, "mine")
    from rest_framework.test import APIClient

    other = APIClient()
    other.credentials(HTTP_AUTHORIZATION=f"Bearer {other_key}")
    response = other.get(f"/v1/events/{event['id']}")
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"


def test_an_erased_event_leaves_its_job_harmless(client, extractor):
    extractor.script["case-erased"] = [[fact("Alice is gone.")]]
    write_event(client, "case-erased: soon erased")
    assert client.delete(f"/v1/subjects/{SUBJECT}?project_id={PROJECT}").status_code == 200
    run_worker(once=True)
    assert Fact.objects.count() == 0 and extractor.requests == []


def test_erasing_the_subject_erases_its_pending_jobs_and_counts_them(client, extractor):
    # given an event of the subject whose extraction is queued, and one of another subject
    erased = write_event(client, "soon erased")
    kept = client.post(
        "/v1/events",
        {"project_id": PROJECT, "subject_id": "bob", "text": "Bob stays.", "occurred_at": "2026-05-01T10:00:00+00:00"},
        format="json",
    ).json()
    assert _jobs() == {"todo": 2}

    # when the subject is erased
    response = client.delete(f"/v1/subjects/{SUBJECT}?project_id={PROJECT}")

    # then its job is gone with it and its receipt counts it; the other subject's job stays
    assert response.status_code == 200 and response.json()["deleted"]["extraction_jobs"] == 1
    assert _jobs_naming(erased["id"]) == 0 and _jobs_naming(kept["id"]) == 1


def _jobs_naming(event_id: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM procrastinate_jobs WHERE args->>'event_id' = %s", [event_id])
        return cursor.fetchone()[0]


def _jobs() -> dict:
    """The extraction queue's jobs by status. (A worker of any queue also defers the periodic jobs of the others,
    the stats rollup and consolidation, into their own queues.)"""
    with connection.cursor() as cursor:
        cursor.execute("SELECT status, count(*) FROM procrastinate_jobs WHERE queue_name = %s GROUP BY status", [QUEUE])
        return dict(cursor.fetchall())
