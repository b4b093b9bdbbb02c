"""POST /v1/events (and its list, GET): events stored and, when extraction is on, queued in one transaction
(ingest.services.event_ingest). The event's detail, a read of the store, is facts' (facts/apis.py)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from facts import selectors
from facts.apis import keyset, one_or_batch, page_response, validate_batch
from facts.events import EventInput
from facts.serializers import (
    EventBatchInSerializer,
    EventBatchOutSerializer,
    EventInSerializer,
    EventListQuerySerializer,
    EventOutSerializer,
    EventPageSerializer,
    event_out,
)
from hakimem.auth import require_project
from hakimem.schema import errors
from hakimem.serializers import query_params, validated
from ingest.services import event_ingest


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
