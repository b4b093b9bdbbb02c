"""Event writes: episodes of a subject's life or conversation, stored as they are (embedded, never compared)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime

from django.db import transaction

from facts.errors import ServiceValidationError
from facts.locks import lock_scopes
from facts.models import Event, ExtractionStatus
from facts.writes import MAX_BATCH, batch_project
from hakimem import telemetry
from hakimem.embeddings import get_embedder


@dataclass
class EventInput:
    project_id: str
    subject_id: str
    text: str
    occurred_at: datetime
    metadata: dict = field(default_factory=dict)


def event_create_batch(*, items: list[EventInput], extraction_pending: bool = False) -> list[Event]:
    """Store events all-or-nothing under their scopes' writers' lock. `extraction_pending` marks them for fact
    extraction, which ingest.services.event_ingest queues in the same transaction."""
    if not 1 <= len(items) <= MAX_BATCH:
        raise ServiceValidationError([{"index": None, "field": "events", "message": f"send 1 to {MAX_BATCH} events"}])
    with telemetry.span("hakimem.events.write", items=len(items)) as span:
        started = time.perf_counter()
        vectors = get_embedder().embed([item.text for item in items])
        embedded = time.perf_counter()
        events = [
            Event(
                project_id=i.project_id,
                subject_id=i.subject_id,
                text=i.text,
                occurred_at=i.occurred_at,
                embedding=v,
                metadata=i.metadata,
                extraction_status=ExtractionStatus.PENDING if extraction_pending else "",
            )
            for i, v in zip(items, vectors)
        ]
        with transaction.atomic():
            # The scope's writers' lock, as facts take it: an erasure of the subject either deletes these events (they
            # were committed before it began) or is over before they are stored.
            lock_scopes((e.project_id, e.subject_id) for e in events)
            Event.objects.bulk_create(events)
        if span.recording:
            span.phase("embed", started, embedded)
            span.phase("store", embedded, time.perf_counter())
            span.set(project_id=batch_project(items), created=len(events))
    return events
