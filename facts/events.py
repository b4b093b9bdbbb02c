"""Event writes: episodes of a subject's life or conversation, stored as they are (embedded, never compared)."""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime

from django.db import transaction

from facts import extraction
from facts.errors import ServiceValidationError
from facts.locks import lock_scopes
from facts.models import Event, ExtractionStatus
from facts.writes import MAX_BATCH
from hakimem.embeddings import get_embedder

logger = logging.getLogger("hakimem.facts")


@dataclass
class EventInput:
    project_id: str
    subject_id: str
    text: str
    occurred_at: datetime
    metadata: dict = field(default_factory=dict)


def event_create_batch(*, items: list[EventInput]) -> list[Event]:
    if not 1 <= len(items) <= MAX_BATCH:
        raise ServiceValidationError([{"index": None, "field": "events", "message": f"send 1 to {MAX_BATCH} events"}])
    vectors = get_embedder().embed([item.text for item in items])
    extract = extraction.enabled()
    events = [
        Event(project_id=i.project_id, subject_id=i.subject_id, text=i.text, occurred_at=i.occurred_at,
              embedding=v, metadata=i.metadata, extraction_status=ExtractionStatus.PENDING if extract else "")
        for i, v in zip(items, vectors)
    ]
    with transaction.atomic():
        # The scope's writers' lock, as facts take it: an erasure of the subject either deletes these events (they
        # were committed before it began) or is over before they are stored.
        lock_scopes((e.project_id, e.subject_id) for e in events)
        Event.objects.bulk_create(events)
        if extract:
            _queue_extraction(events)
    return events


def _queue_extraction(events: list[Event]) -> None:
    """Queue the events' extraction in their own transaction: committed together or not at all. The queue
    failing (its tables missing, say) never fails the events' write: they are stored as failed, enqueue_failed."""
    from facts.tasks import extract_event  # procrastinate's app is ready only once Django is

    try:
        with transaction.atomic():
            extract_event.batch_defer(*({"event_id": str(e.id)} for e in events))
    except Exception:
        logger.exception("extraction: %d event(s) could not be queued", len(events))
        Event.objects.filter(id__in=[e.id for e in events]).update(
            extraction_status=ExtractionStatus.FAILED, extraction_error="enqueue_failed")
        for event in events:
            event.extraction_status, event.extraction_error = ExtractionStatus.FAILED, "enqueue_failed"
