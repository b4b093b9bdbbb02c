"""A batch of facts too heavy to write within its request, written by the task queue instead: POST /v1/facts answers
202 with a job (ingest.models.FactWriteJob), the queue's worker runs the same write (facts.writes.fact_create_batch,
all-or-nothing) and GET /v1/jobs/{id} tells pending, done with the facts' ids, or failed with the error the request
would have had.

Heavy is by the batch's characters (HAKI_WRITE_JOB_CHARS): a fact costs its embedding (up to the model's 256
tokens) and its claims' reading (every sentence), and a batch of 500 facts of 8,000 characters takes longer than
gunicorn lets a worker be silent (60 s) on two loaded cores, where a job has no such limit.
"""

from __future__ import annotations

import json
import logging

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from facts.apis import service_errors
from facts.errors import ServiceValidationError
from facts.writes import FactInput, FactWriteResult, fact_create_batch
from hakimem.embeddings import EmbedderUnavailable
from hakimem.errors import ErrorCode, error_body
from hakimem.rowsecurity import api_transaction
from ingest.models import FactWriteJob, WriteJobStatus

logger = logging.getLogger("hakimem.facts")

QUEUE = "writes"


def is_heavy(items: list[dict]) -> bool:
    """Whether a validated batch goes to the queue rather than being written in its request."""
    return sum(len(item["text"]) for item in items) > settings.HAKI_WRITE_JOB_CHARS


def fact_write_job_create(*, items: list[dict], actor: str) -> FactWriteJob:
    """Store the validated items as a pending job and queue its run, in one transaction: a job is never queued
    without being stored nor stored pending without being queued."""
    from ingest.tasks import write_facts  # procrastinate's app is ready only once Django is

    with transaction.atomic():
        job = FactWriteJob.objects.create(
            project_id=items[0]["project_id"],
            subject_ids=sorted({item["subject_id"] for item in items}),
            actor=actor,
            items=json.loads(json.dumps(items, cls=DjangoJSONEncoder)),
        )
        write_facts.defer(job_id=str(job.id), project_id=job.project_id)
    return job


def _inputs(items: list[dict]) -> list[FactInput]:
    return [
        FactInput(
            **{
                **item,
                "valid_from": item.get("valid_from") and parse_datetime(item["valid_from"]),
                "valid_to": item.get("valid_to") and parse_datetime(item["valid_to"]),
            }
        )
        for item in items
    ]


def _outcome(result: FactWriteResult) -> dict:
    return {
        "id": str(result.fact.id),
        "deduplicated": result.deduplicated,
        "conflict_set_id": str(result.conflict_set.id) if result.conflict_set else None,
    }


def _error(exc: Exception) -> dict:
    """The error body's content the request would have answered with."""
    if isinstance(exc, ServiceValidationError):  # consent_missing or invalid_request, as POST /v1/facts maps them
        refused = service_errors(exc)
        return error_body(refused.code, refused.message, refused.details)["error"]
    if isinstance(exc, EmbedderUnavailable):
        message = f"The embedder is unavailable; nothing was written. ({exc})"
        return {"code": ErrorCode.EMBEDDER_UNAVAILABLE.value, "message": message, "details": {}}
    return {"code": ErrorCode.INTERNAL_ERROR.value, "message": "The write failed; nothing was written.", "details": {}}


class _JobGone(Exception):
    """The job was erased (or run) while its facts were being written: they are rolled back."""


def fact_write_job_run(*, job_id: str, project_id: str) -> None:
    """Write a pending job's facts as its request would have, as the API role over its project, and record the
    outcome in the same transaction: done with the facts' ids, or failed with the error and nothing written. A job
    gone (its subject erased) or no longer pending (run twice) writes nothing. The job's row is not locked before
    the write takes its scopes' locks: an erasure holds those, then deletes the job."""
    with api_transaction(project_id):
        job = FactWriteJob.objects.filter(id=job_id, status=WriteJobStatus.PENDING).first()
    if job is None:
        return
    try:
        with api_transaction(project_id):
            results = fact_create_batch(items=_inputs(job.items), actor=job.actor)
            if not _finish(job_id, WriteJobStatus.DONE, results=[_outcome(r) for r in results]):
                raise _JobGone
    except _JobGone:
        return
    except Exception as exc:
        if not isinstance(exc, (ServiceValidationError, EmbedderUnavailable)):
            logger.exception("write job %s failed", job_id)
        with api_transaction(project_id):
            _finish(job_id, WriteJobStatus.FAILED, error=_error(exc))


def _finish(job_id: str, status: str, *, results: list | None = None, error: dict | None = None) -> bool:
    """Record a pending job's outcome (its items dropped: the texts are the facts' now, or were refused)."""
    return bool(
        FactWriteJob.objects.filter(id=job_id, status=WriteJobStatus.PENDING).update(
            status=status, results=results or [], error=error, items=[], finished_at=timezone.now()
        )
    )


def write_jobs_erase(project_id: str, subject_id: str | None) -> dict[str, int]:
    """Delete the write jobs naming the scope (every job of the project when subject_id is None), in the erasure's
    transaction: a pending one holds its items' texts. Its queued run then finds it gone and writes nothing."""
    jobs = FactWriteJob.objects.filter(project_id=project_id)
    if subject_id is not None:
        jobs = jobs.filter(subject_ids__contains=[subject_id])
    deleted, _ = jobs.delete()
    return {"write_jobs": deleted}
