from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from hakimem.errors import ApiError, ErrorCode
from hakimem.schema import errors
from hakimem.serializers import iso
from traces.selectors import trace_decisions, trace_get


class InspectApi(APIView):
    """GET /v1/inspect/{trace_id}: what a context call was asked, what it served, how long each phase took,
    and every decision with its reason code and score parts."""

    @extend_schema(summary="A context call's request, packet, timings and every decision", responses={
        200: inline_serializer("Inspection", {
            "trace_id": serializers.UUIDField(), "created_at": serializers.DateTimeField(),
            "request": serializers.DictField(), "packet": serializers.DictField(), "embedder": serializers.CharField(),
            "timings_ms": serializers.DictField(), "latency_ms": serializers.FloatField(),
            "decisions": serializers.ListField(child=serializers.DictField()),
        }), **errors(404)})
    def get(self, request, trace_id):
        trace = trace_get(project_id=request.user.project_id, trace_id=trace_id)
        if trace is None:
            raise ApiError(ErrorCode.NOT_FOUND, "No such trace.", status_code=404)
        decisions = trace_decisions(trace=trace)
        return Response(
            {
                "trace_id": str(trace.id),
                "created_at": iso(trace.created_at),
                "request": {
                    "project_id": trace.project_id,
                    "subject_id": trace.subject_id,
                    "query": trace.query,
                    "budget_tokens": trace.budget_tokens,
                },
                "packet": {
                    "status": trace.status,
                    "empty_reason": trace.empty_reason,
                    "warnings": trace.warnings,
                    "used_tokens": trace.used_tokens,
                    "facts_served": trace.facts_served,
                    "episodes_served": trace.episodes_served,
                    "candidates": trace.candidates,
                    "rendered": trace.rendered,
                },
                "embedder": trace.embedder,
                "timings_ms": trace.timings,
                "latency_ms": trace.latency_ms,
                "decisions": [
                    {
                        "item_type": d["item_type"],
                        "item_id": str(d["item_id"]),
                        "text": d["text"],
                        "decision": d["decision"],
                        "reason_code": d["reason_code"],
                        "rank": d["rank"],
                        "score": d["score"],
                        "score_parts": {
                            "similarity": d["similarity"],
                            "cosine_distance": d["cosine_distance"],
                            "text_rank": d["text_rank"],
                            "recency": d["recency"],
                        },
                        "tokens": d["tokens"],
                        "entity": d["entity"] or None,
                    }
                    for d in decisions
                ],
            }
        )
