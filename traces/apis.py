from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from hakimem.errors import ApiError, ErrorCode
from hakimem.schema import errors
from traces.selectors import trace_get, trace_inspect


class InspectApi(APIView):
    """GET /v1/inspect/{trace_id}: what a context call was asked, what it served, how long each phase took,
    and every decision with its reason code and score parts."""

    @extend_schema(
        summary="A context call's request, packet, timings and every decision",
        responses={
            200: inline_serializer(
                "Inspection",
                {
                    "trace_id": serializers.UUIDField(),
                    "created_at": serializers.DateTimeField(),
                    "request": serializers.DictField(),
                    "packet": serializers.DictField(),
                    "replay_of": serializers.UUIDField(
                        allow_null=True, help_text="the trace this one replays; null for a context call"
                    ),
                    "replay": serializers.DictField(allow_null=True, help_text='a replay\'s {"as_of", "overrides"}'),
                    "embedder": serializers.CharField(),
                    "timings_ms": serializers.DictField(),
                    "latency_ms": serializers.FloatField(),
                    "decisions": serializers.ListField(child=serializers.DictField()),
                },
            ),
            **errors(404),
        },
    )
    def get(self, request, trace_id):
        trace = trace_get(project_id=request.user.project_id, trace_id=trace_id, wait_for_pending=True)
        if trace is None:
            raise ApiError(ErrorCode.NOT_FOUND, "No such trace.", status_code=404)
        return Response(trace_inspect(trace=trace))
