"""Events in, facts out: an event write that queues the events' fact extraction in its own transaction, and the
erasure of a scope's queued jobs. The store (facts) knows nothing of the queue: this app calls it."""

from __future__ import annotations

import logging

from django.db import connection, transaction

from facts.erasure import erase_condition
from facts.events import EventInput, event_create_batch
from facts.models import Event, ExtractionStatus
from ingest import extraction

logger = logging.getLogger("hakimem.extraction")


def event_ingest(*, items: list[EventInput]) -> list[Event]:
    """Store the events (facts.events.event_create_batch) and, when extraction is on, queue one job per event in
    the same transaction: an event is never queued without being stored nor stored pending without being queued."""
    if not extraction.enabled():
        return event_create_batch(items=items)
    with transaction.atomic():
        events = event_create_batch(items=items, extraction_pending=True)
        _queue_extraction(events)
    return events


def _queue_extraction(events: list[Event]) -> None:
    """Queue the events' extraction in their own transaction: committed together or not at all. The queue
    failing (its tables missing, say) never fails the events' write: they are stored as failed, enqueue_failed."""
    from ingest.tasks import extract_event  # procrastinate's app is ready only once Django is

    try:
        with transaction.atomic():
            extract_event.batch_defer(*({"event_id": str(e.id)} for e in events))
    except Exception:
        logger.exception("extraction: %d event(s) could not be queued", len(events))
        Event.objects.filter(id__in=[e.id for e in events]).update(
            extraction_status=ExtractionStatus.FAILED, extraction_error="enqueue_failed"
        )
        for event in events:
            event.extraction_status, event.extraction_error = ExtractionStatus.FAILED, "enqueue_failed"


# Queued extractions name the events by id. A job a worker is running ('doing') is left to end: it finds its event
# gone and writes nothing (ingest.extraction.event_extract). The queue is small (succeeded jobs are deleted): no
# index on the event id is needed.
_JOBS_ERASE_SQL = (
    "DELETE FROM procrastinate_jobs j USING facts_event e WHERE j.queue_name = %(queue)s"
    " AND j.task_name = %(extract_task)s AND j.status <> 'doing' AND j.args->>'event_id' = e.id::text AND "
)


def extraction_jobs_erase(project_id: str, subject_id: str | None) -> dict[str, int]:
    """Delete the queued extraction jobs of the scope's events (of the whole project when subject_id is None), in
    the erasure's transaction and before its events go: the count for the erasure's receipt."""
    from ingest.tasks import QUEUE, extract_event  # procrastinate's app is ready only once Django is

    with connection.cursor() as cursor:
        cursor.execute(
            _JOBS_ERASE_SQL + erase_condition(subject_id, "e"),
            {"p": project_id, "s": subject_id, "queue": QUEUE, "extract_task": extract_event.name},
        )
        return {"extraction_jobs": cursor.rowcount}
