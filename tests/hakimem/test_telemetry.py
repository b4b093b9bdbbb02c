"""OpenTelemetry (hakimem/telemetry.py): a context call's span with one child per phase its trace times, a write's
span, the hakimem trace id and project in attributes and never a fact's text, a query or a subject id; without
OTEL_EXPORTER_OTLP_ENDPOINT no exporter and nothing of opentelemetry imported; with it, OTLP over HTTP from a
gunicorn worker's post_fork."""

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from hakimem import telemetry
from tests.conftest import PROJECT

ROOT = Path(__file__).resolve().parents[2]
SUBJECT = "subject-ottoline"
FACTS = [
    "Ottoline keeps bees behind the old mill.",
    "Ottoline is allergic to hazelnuts.",
    "Ottoline sings in the Quimper choir.",
]
# two facts in an open conflict set: the call blocks them and says so in a warning
CONFLICTING = [
    "Ottoline's friend Paul lives in Nantes with his wife and their two children.",
    "Ottoline's friend Paul lives in Bordeaux with his wife and their two children.",
]
QUERY = "What is Ottoline allergic to, and where does Paul live?"
EVENT = "Ottoline told us about her trip to Ushuaia."


@pytest.fixture
def spans():
    exporter = InMemorySpanExporter()
    telemetry.setup(exporter=exporter)
    yield exporter
    telemetry.shutdown()


def named(exporter, name: str) -> list:
    return [s for s in exporter.get_finished_spans() if s.name == name]


def assert_no_text(exporter, *texts: str) -> None:
    """No attribute of any span holds one of `texts`, nor a part of it."""
    values = [json.dumps(dict(s.attributes)) + s.name for s in exporter.get_finished_spans()]
    assert values
    for text in texts:
        for value in values:
            assert text not in value and text.split()[0] not in value, (text, value)


@pytest.mark.django_db
def test_a_context_call_is_a_span_with_its_phases_its_trace_id_and_no_text(api, spans):
    # given a scope with facts, two of them in conflict
    texts = FACTS + CONFLICTING
    assert (
        api.post(
            "/v1/facts",
            {"facts": [{"project_id": PROJECT, "subject_id": SUBJECT, "text": t} for t in texts]},
            format="json",
        ).status_code
        == 201
    )
    spans.clear()

    # when a context call is made (its trace is written once the response is closed)
    response = api.post("/v1/context", {"project_id": PROJECT, "subject_id": SUBJECT, "query": QUERY}, format="json")
    assert response.status_code == 200
    packet = response.json()
    timings = api.get(f"/v1/inspect/{packet['trace_id']}").json()["timings_ms"]

    # then one span for the call, with the hakimem trace id, the project and counts
    [call] = named(spans, "hakimem.context")
    assert call.attributes["hakimem.trace_id"] == packet["trace_id"]
    assert call.attributes["hakimem.project_id"] == PROJECT
    assert call.attributes["hakimem.status"] == packet["status"]
    assert call.attributes["hakimem.facts_served"] == len(packet["facts"]) > 0
    assert call.attributes["hakimem.warnings"] == len(packet["warnings"]) > 0
    # and a child per phase of the trace's timings, over the same boundaries, one after the other inside the call
    phases = {
        s.name.removeprefix("hakimem.context."): s
        for s in spans.get_finished_spans()
        if s.name.startswith("hakimem.context.") and s.name != "hakimem.context.trace_write"
    }
    assert set(phases) == set(timings) >= {"embed", "retrieve", "rank", "pack", "multi_hop", "render"}
    ordered = sorted(phases.values(), key=lambda s: s.start_time)
    assert ordered[0].start_time >= call.start_time and ordered[-1].end_time <= call.end_time
    for before, after in zip(ordered, ordered[1:]):
        assert after.start_time == before.end_time
    for name, span in phases.items():
        assert span.parent.span_id == call.context.span_id and span.context.trace_id == call.context.trace_id
        assert abs((span.end_time - span.start_time) / 1e6 - timings[name]) < 0.01, name
    # and the trace's writing, after the response, a child of the call too
    [write] = named(spans, "hakimem.context.trace_write")
    assert write.parent.span_id == call.context.span_id
    assert write.attributes["hakimem.trace_id"] == packet["trace_id"]
    # and never the query, a fact's text or the subject id
    assert_no_text(spans, QUERY, SUBJECT, *texts)


@pytest.mark.django_db
def test_writes_and_an_erasure_are_spans_with_counts_and_no_text(api, spans):
    # when a batch of facts and an event are written, then the subject erased
    assert (
        api.post(
            "/v1/facts",
            {"facts": [{"project_id": PROJECT, "subject_id": SUBJECT, "text": t} for t in FACTS]},
            format="json",
        ).status_code
        == 201
    )
    assert (
        api.post(
            "/v1/events",
            {"project_id": PROJECT, "subject_id": SUBJECT, "text": EVENT, "occurred_at": "2026-01-01T10:00:00Z"},
            format="json",
        ).status_code
        == 201
    )
    erased = api.delete(f"/v1/subjects/{SUBJECT}?project_id={PROJECT}")
    assert erased.status_code == 200, erased.content

    # then each is a span with its project and counts
    [facts] = named(spans, "hakimem.facts.write")
    assert facts.attributes["hakimem.project_id"] == PROJECT
    assert facts.attributes["hakimem.items"] == facts.attributes["hakimem.created"] == len(FACTS)
    assert [s.name for s in spans.get_finished_spans() if s.parent and s.parent.span_id == facts.context.span_id] == [
        "hakimem.facts.write.embed",
        "hakimem.facts.write.store",
    ]
    [events] = named(spans, "hakimem.events.write")
    assert events.attributes["hakimem.created"] == 1
    [erasure] = named(spans, "hakimem.subject.erase")
    assert erasure.attributes["hakimem.project_id"] == PROJECT
    assert erasure.attributes["hakimem.erased.facts"] == erased.json()["deleted"]["facts"] == len(FACTS)
    assert erasure.attributes["hakimem.erased.events"] == 1
    # and none holds a text or the subject id
    assert_no_text(spans, SUBJECT, EVENT, *FACTS)


@pytest.mark.django_db
def test_a_refused_write_says_its_error_type_and_not_its_message(api, spans):
    body = {
        "project_id": PROJECT,
        "subject_id": SUBJECT,
        "text": FACTS[0],
        "source_event_id": "00000000-0000-0000-0000-000000000000",
    }
    assert api.post("/v1/facts", body, format="json").status_code == 400

    [write] = named(spans, "hakimem.facts.write")
    assert write.status.status_code == StatusCode.ERROR
    assert write.status.description == write.attributes["hakimem.error_type"] == "ServiceValidationError"
    assert not write.events  # no exception event: its message is not exported


def test_an_attribute_outside_the_list_is_refused(spans):
    with pytest.raises(ValueError, match="query"):
        telemetry.span("hakimem.context", query=QUERY)


def test_without_the_endpoint_no_exporter_is_set_up_and_nothing_of_opentelemetry_imported(monkeypatch, gunicorn_conf):
    # given no OTEL_EXPORTER_OTLP_ENDPOINT
    monkeypatch.delenv(telemetry.ENDPOINT, raising=False)
    telemetry.shutdown()

    # then setting up (as a gunicorn worker and Django's start do) sets nothing up: every span is the one no-op
    assert telemetry.setup() is False and not telemetry.enabled()
    gunicorn_conf.post_fork(None, None)
    assert not telemetry.enabled()
    with telemetry.span("hakimem.context", project_id=PROJECT) as span:
        assert span is telemetry._NO_SPAN and not span.recording
    # and a process that does the same never imports opentelemetry
    env = {k: v for k, v in os.environ.items() if k != telemetry.ENDPOINT}
    code = (
        "import sys; from config import gunicorn; from hakimem import telemetry; gunicorn.post_fork(None, None); "
        "telemetry.span('hakimem.context', project_id='p').__enter__().phase('embed', 0.0, 1.0); "
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


class _Collector(BaseHTTPRequestHandler):
    """An OTLP/HTTP receiver on the loopback: keeps each request's path and body."""

    received: list = []

    def do_POST(self):  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append((self.path, self.headers["Content-Type"], body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args):
        pass


def test_with_the_endpoint_a_worker_exports_its_spans_by_otlp_over_http(monkeypatch, gunicorn_conf):
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    server = HTTPServer(("127.0.0.1", 0), _Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Collector.received = []
    try:
        # given the endpoint, when a gunicorn worker starts, records a span and exits
        monkeypatch.setenv(telemetry.ENDPOINT, f"http://127.0.0.1:{server.server_port}")
        monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
        telemetry.shutdown()
        gunicorn_conf.post_fork(None, None)
        assert telemetry.enabled()
        with telemetry.span("hakimem.context", project_id=PROJECT, trace_id="t-1") as span:
            span.phase("embed", 1.0, 1.5)
        gunicorn_conf.worker_exit(None, None)
    finally:
        server.shutdown()
        telemetry.shutdown()

    # then the collector got them at /v1/traces, as OTLP protobuf, from the service "hakimem"
    [(path, content_type, body)] = _Collector.received
    assert path == "/v1/traces" and content_type == "application/x-protobuf"
    request = ExportTraceServiceRequest.FromString(body)
    [resource_spans] = request.resource_spans
    service = {a.key: a.value.string_value for a in resource_spans.resource.attributes}["service.name"]
    assert service == "hakimem"
    exported = {s.name: s for scope in resource_spans.scope_spans for s in scope.spans}
    assert set(exported) == {"hakimem.context", "hakimem.context.embed"}
    assert (
        exported["hakimem.context.embed"].end_time_unix_nano - exported["hakimem.context.embed"].start_time_unix_nano
        == 500_000_000
    )
