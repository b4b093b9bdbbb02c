"""OpenTelemetry spans of context calls and writes, exported by OTLP over HTTP when OTEL_EXPORTER_OTLP_ENDPOINT is set.

Spans (attributes under `hakimem.`):
- hakimem.context: one context call (context/assembler.py), with one child per phase its trace times (embed,
  retrieve, rank, pack, multi_hop, render, ...: the assembler's _Timer laps, their boundaries and durations), and
  hakimem.context.trace_write, the trace's writing, which may come after the response is sent;
- hakimem.facts.write, hakimem.events.write (children embed and store), hakimem.subject.erase and
  hakimem.consent.revoke (category_erase: with its facts erased), each with its receipt (rows erased per table).
Attributes are ids and counts only, from ATTRIBUTES: the hakimem trace id, the project id, a status, counts. Never a
fact's or event's text, a query or a subject id (tests/hakimem/test_telemetry.py). A failed span records the
exception's type, never its message (a database error can quote a row's values).

Unset (the default), nothing of opentelemetry is imported and every span is one shared object that does nothing: a
context call pays a few attribute reads. Set, each process builds its own provider with a batch processor (its own
thread): a gunicorn worker in post_fork (config/gunicorn.py), any other process when Django starts (HakimemConfig);
the SDK reads its other OTEL_* variables itself (OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, ...).
This module imports nothing of Django: gunicorn's post_fork runs it before Django is set up.
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager

ENDPOINT = "OTEL_EXPORTER_OTLP_ENDPOINT"
SERVICE_NAME = "hakimem"
TRACER_NAME = "hakimem"

# What a span may say about a call or a write: ids and counts. A name outside this list is refused (ValueError), so no
# text can reach an exporter by a new attribute nobody reviewed.
ATTRIBUTES = frozenset(
    {
        "trace_id",
        "project_id",
        "status",
        "empty_reason",
        "replay",
        "tiered",
        "budget_tokens",
        "used_tokens",
        "candidates",
        "facts_served",
        "episodes_served",
        "warnings",
        "items",
        "created",
        "deduplicated",
        "conflicts",
        "category_erase",
    }
)
ERASED_PREFIX = "erased."  # an erasure's receipt, per table: erased.facts, erased.traces, ...

_tracer = None  # the SDK's tracer once setup() ran in this process; None: every span is _NO_SPAN
_provider = None
_pid: int | None = None


def _attributes(values: dict) -> dict:
    unknown = [k for k in values if k not in ATTRIBUTES and not k.startswith(ERASED_PREFIX)]
    if unknown:
        raise ValueError(f"not a span attribute hakimem exports: {', '.join(unknown)}")
    return {f"hakimem.{k}": v for k, v in values.items() if v is not None}


class _NoSpan:
    """Every span while no exporter is set up: does nothing, allocates nothing."""

    recording = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def set(self, **attributes) -> None:
        pass

    def phase(self, name: str, started: float, ended: float) -> None:
        pass


_NO_SPAN = _NoSpan()


class Span:
    """A recording span: set() adds attributes, phase() adds a finished child from two time.perf_counter() readings."""

    recording = True

    def __init__(self, name: str, span):
        self.name, self._span = name, span
        self._epoch_offset_ns = time.time_ns() - time.perf_counter_ns()  # perf_counter readings to the wall clock

    def set(self, **attributes) -> None:
        self._span.set_attributes(_attributes(attributes))

    def phase(self, name: str, started: float, ended: float) -> None:
        from opentelemetry import trace

        child = _tracer.start_span(
            f"{self.name}.{name}",
            context=trace.set_span_in_context(self._span),
            start_time=int(started * 1e9) + self._epoch_offset_ns,
        )
        child.end(end_time=int(ended * 1e9) + self._epoch_offset_ns)


def span(name: str, parent: Span | _NoSpan | None = None, **attributes):
    """A context manager giving the span `name`, current while it runs, child of `parent` when given (a span already
    ended: the trace written after the response), else of the current one."""
    if _tracer is None:
        return _NO_SPAN
    return _recording(name, parent, _attributes(attributes))


@contextmanager
def _recording(name: str, parent, attributes: dict):
    from opentelemetry import trace
    from opentelemetry.trace import Status, StatusCode

    context = trace.set_span_in_context(parent._span) if isinstance(parent, Span) else None
    with _tracer.start_as_current_span(
        name, context=context, attributes=attributes, record_exception=False, set_status_on_exception=False
    ) as otel_span:
        try:
            yield Span(name, otel_span)
        except BaseException as exc:
            # The type only: a message may quote a row (an IntegrityError's "Key (subject_id)=(...)").
            otel_span.set_attribute("hakimem.error_type", type(exc).__qualname__)
            otel_span.set_status(Status(StatusCode.ERROR, type(exc).__qualname__))
            raise


def enabled() -> bool:
    return _tracer is not None


def setup(exporter=None) -> bool:
    """Build this process's tracer: with `exporter` (the tests' in-memory one) behind a processor that exports each
    span as it ends; else, when OTEL_EXPORTER_OTLP_ENDPOINT is set (and OTEL_SDK_DISABLED is not true), OTLP over HTTP
    behind a batch processor, once per process. Returns whether spans are now recorded."""
    global _tracer, _provider, _pid
    if exporter is None:
        if not os.environ.get(ENDPOINT, "").strip() or os.environ.get("OTEL_SDK_DISABLED", "").lower() == "true":
            return False
        if _pid == os.getpid():
            return True
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    shutdown()
    provider = TracerProvider(
        resource=Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME") or SERVICE_NAME})
    )
    if exporter is None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    else:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    _provider, _tracer, _pid = provider, provider.get_tracer(TRACER_NAME), os.getpid()
    return True


def shutdown() -> None:
    """Export what the batch processor holds and stop it (a gunicorn worker's exit); spans are then no-ops."""
    global _tracer, _provider, _pid
    provider, _provider, _tracer, _pid = _provider, None, None, None
    if provider is not None:
        provider.shutdown()
