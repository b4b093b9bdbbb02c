import logging

from django.db import DatabaseError
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from context.assembler import context_assemble
from context.replay import ReplayRefused, context_replay
from context.serializers import (
    ContextPacketSerializer,
    ContextRequestSchema,
    ContextRequestSerializer,
    ReplayRequestSerializer,
    call_budget,
    call_options,
    validate_budget,
)
from hakimem.auth import require_project
from hakimem.errors import ApiError, ErrorCode
from hakimem.rowsecurity import api_transaction
from hakimem.schema import errors
from hakimem.serializers import validated
from traces.selectors import trace_get
from traces.services import trace_pending_begin, trace_pending_end

logger = logging.getLogger("hakimem.context")


class ContextApi(APIView):
    """POST /v1/context: the ContextPacket for one LLM turn, and a trace of every decision behind it."""

    @extend_schema(
        summary="The ContextPacket for one LLM turn",
        request=ContextRequestSchema,
        responses={200: ContextPacketSerializer, **errors(400, 404, 413, 415)},
        description="400 budget_exceeded when budget_tokens is not a positive integer up to the cap.",
    )
    def post(self, request):
        data = request.data if isinstance(request.data, dict) else {}
        sent = validate_budget(data) if "budget_tokens" in data else None  # budget_exceeded before any other check
        serializer = ContextRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        params = serializer.validated_data
        require_project(request, params["project_id"])
        options = call_options(params)
        writes = []
        packet = context_assemble(
            project_id=params["project_id"],
            subject_id=params["subject_id"],
            query=params["query"],
            budget_tokens=call_budget(sent, options),
            options=options,
            write_trace=writes.append,
        )
        trace_pending_begin(packet["trace_id"])  # until it is written: a reader of the trace waits for it
        return PacketResponse(packet, project_id=params["project_id"], write_trace=writes[0])


class PacketResponse(Response):
    """A ContextPacket whose trace is written once the response is sent: the WSGI server (gunicorn, and Django's
    test client alike) calls close() after the body's last byte, so no client waits for its trace (4-6 ms of a
    call, docs/performance.md). The trace is written under the same lock and existence check as before, in a
    transaction of its own: readable a few milliseconds after the answer. Should its writing fail, the answer
    was given: the failure is logged with the trace id, as a trace refused after an erasure is. Until the trace is
    committed, the call's connection holds the trace's pending lock (traces.models.TRACE_PENDING_KEY), which
    `GET /v1/inspect/{id}` waits on when it does not find the trace yet."""

    def __init__(self, packet: dict, *, project_id: str, write_trace):
        super().__init__(packet)
        self._trace = (project_id, packet["trace_id"], write_trace)

    def close(self):
        if self._trace is not None:
            (project_id, trace_id, write), self._trace = self._trace, None
            try:
                with api_transaction(project_id):
                    write()
            except Exception as exc:  # the response is gone: nothing to answer, the log says it
                logger.error("trace %s not written after its response: %s", trace_id, type(exc).__name__)
            finally:
                try:
                    trace_pending_end(trace_id)
                except DatabaseError:  # the connection is gone, and its session's lock with it
                    pass
        super().close()


class ReplayApi(APIView):
    """POST /v1/inspect/{trace_id}/replay: the traced call run again (same query, scope and budget), now or as the
    memory stood then, under optional overrides; the new packet, its trace and the diff against the original."""

    @extend_schema(
        summary="Replay a context call and compare",
        request=ReplayRequestSerializer,
        responses={
            200: inline_serializer(
                "Replay",
                {
                    "trace_id": serializers.UUIDField(),
                    "replay_of": serializers.UUIDField(),
                    "as_of": serializers.CharField(),
                    "overrides": serializers.DictField(),
                    "config": serializers.DictField(),
                    "packet": ContextPacketSerializer(),
                    "diff": serializers.DictField(),
                    "notes": serializers.ListField(child=serializers.CharField()),
                },
            ),
            **errors(400, 404, 413, 415),
        },
        description="404 not_found for an unknown trace, and for every trace of an erased subject (erasure deletes "
        "them): an erased memory cannot be replayed. 400 invalid_request for an override out of its "
        "range, or a trace that is itself a replay; 400 budget_exceeded for overrides.budget_tokens.",
    )
    def post(self, request, trace_id):
        params = validated(ReplayRequestSerializer, request.data)
        trace = trace_get(project_id=request.user.project_id, trace_id=trace_id, wait_for_pending=True)
        if trace is None:
            raise ApiError(
                ErrorCode.NOT_FOUND, "No such trace (an erased subject's traces are gone with it).", status_code=404
            )
        try:
            result = context_replay(trace=trace, as_of=params["as_of"], overrides=params.get("overrides") or {})
        except ReplayRefused as exc:
            if trace.replay_of is None:
                raise ApiError(ErrorCode.NOT_FOUND, str(exc), status_code=404) from None
            raise ApiError(ErrorCode.INVALID_REQUEST, str(exc)) from None
        return Response(result)
