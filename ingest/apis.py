"""POST /v1/events (and its list, GET): events stored and, when extraction is on, queued in one transaction
(ingest.services.event_ingest). The event's detail, a read of the store, is facts' (facts/apis.py).
POST /v1/facts (and its list): a heavy batch is accepted as a job of the task queue (ingest/writes.py), any other
written in its request as the store's own endpoint does; GET /v1/jobs/{id} tells the job's outcome."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from facts import apis as store_apis
from facts import selectors
from facts.apis import actor_of, keyset, one_or_batch, page_response, validate_batch
from facts.events import EventInput
from facts.serializers import (
    EventBatchInSerializer,
    FactBatchInSerializer,
    FactBatchOutSerializer,
    FactInSerializer,
    FactWrittenSerializer,
    EventBatchOutSerializer,
    EventInSerializer,
    EventListQuerySerializer,
    EventOutSerializer,
    EventPageSerializer,
    event_out,
)
from hakimem.auth import require_project
from hakimem.errors import ApiError, ErrorCode
from hakimem.schema import errors
from hakimem.serializers import query_params, validated
from ingest.models import FactWriteJob
from ingest.serializers import FactWriteJobAcceptedSerializer, FactWriteJobSerializer, job_out
from ingest.services import event_ingest
from ingest.writes import fact_write_job_create, is_heavy


class EventsApi(APIView):
    @extend_schema(
        operation_id="events_list",
        summary="A scope's events (episodes), newest first",
        parameters=[EventListQuerySerializer],
        responses={200: EventPageSerializer, **errors(400, 404)},
    )
    def get(self, request):
        params = validated(EventListQuerySerializer, query_params(request))
        require_project(request, params["project_id"])
        qs = selectors.event_list(project_id=params["project_id"], subject_id=params["subject_id"], filters=params)
        rows, next_cursor = keyset(qs, "occurred_at", params)
        return page_response(rows, next_cursor, event_out, "events")

    @extend_schema(
        summary="Write one event, or a batch of up to 500 (all-or-nothing)",
        request=one_or_batch("EventWrite", EventInSerializer, EventBatchInSerializer),
        responses={
            201: one_or_batch("EventWriteAnswer", EventOutSerializer, EventBatchOutSerializer),
            **errors(400, 404, 413, 415),
        },
    )
    def post(self, request):
        items, is_batch = validate_batch(request, EventInSerializer, "events")
        events = event_ingest(items=[EventInput(**item) for item in items])
        rendered = [event_out(e) for e in events]
        return Response({"events": rendered} if is_batch else rendered[0], status=status.HTTP_201_CREATED)


class FactsApi(store_apis.FactsApi):
    @extend_schema(
        summary="Write one fact, or a batch of up to 500 (all-or-nothing); a heavy batch is accepted as a job",
        description="A batch with more than HAKI_WRITE_JOB_CHARS characters of text (100,000 by default) is "
        "validated, then written by the task queue: 202 with the job, whose outcome GET /v1/jobs/{id} tells.",
        request=one_or_batch("FactWrite", FactInSerializer, FactBatchInSerializer),
        responses={
            201: one_or_batch("FactWriteAnswer", FactWrittenSerializer, FactBatchOutSerializer),
            202: FactWriteJobAcceptedSerializer,
            **errors(400, 403, 404, 413, 415),
        },
    )
    def post(self, request):
        items, is_batch = validate_batch(request, FactInSerializer, "facts")
        if not is_heavy(items):
            return self.write(request, items, is_batch)
        job = fact_write_job_create(items=items, actor=actor_of(request))
        return Response(
            {"job": job_out(job)}, status=status.HTTP_202_ACCEPTED, headers={"Location": f"/v1/jobs/{job.id}"}
        )


class JobDetailApi(APIView):
    @extend_schema(
        operation_id="jobs_retrieve",
        summary="A write job: pending, done with its facts, or failed with the error (nothing written)",
        responses={200: FactWriteJobSerializer, **errors(404)},
    )
    def get(self, request, job_id):
        job = FactWriteJob.objects.filter(project_id=request.user.project_id, id=job_id).first()
        if job is None:
            raise ApiError(ErrorCode.NOT_FOUND, "No such job.", status_code=404)
        return Response(job_out(job))
