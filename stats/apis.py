from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from hakimem.auth import require_project
from hakimem.schema import errors
from hakimem.serializers import query_params, validated
from stats.selectors import stats_overview
from stats.serializers import OverviewQuerySerializer, overview_out


class StatsOverviewApi(APIView):
    """GET /v1/stats/overview: how memory was used by the project's context calls in a period, and the state
    of its store now (active facts, open conflicts)."""

    @extend_schema(
        summary="How the project's context calls used memory in [since, until)",
        parameters=[OverviewQuerySerializer],
        responses={
            200: inline_serializer(
                "Overview",
                {
                    "project_id": serializers.CharField(),
                    "since": serializers.DateTimeField(),
                    "until": serializers.DateTimeField(),
                    "context_calls": serializers.IntegerField(),
                    "calls_injected": serializers.IntegerField(help_text="calls that served something"),
                    "injection_rate": serializers.FloatField(
                        allow_null=True, help_text="calls_injected / context_calls"
                    ),
                    "hit_rate": serializers.FloatField(allow_null=True, help_text="deprecated: injection_rate"),
                    "deprecated": serializers.DictField(),
                    "empty_reasons": serializers.DictField(
                        child=serializers.IntegerField(),
                        help_text="the calls that served nothing, per empty reason (every one, 0 when absent), and "
                        "not_recorded: empty calls traced before empty reasons were recorded; with "
                        "calls_injected they add up to context_calls",
                    ),
                    "decisions_by_reason_code": serializers.DictField(),
                    "mean_used_tokens": serializers.FloatField(allow_null=True),
                    "latency_ms": serializers.DictField(),
                    "active_facts": serializers.IntegerField(),
                    "open_conflicts": serializers.DictField(),
                    "facts_never_served": serializers.IntegerField(),
                },
            ),
            **errors(400, 404),
        },
    )
    def get(self, request):
        params = validated(OverviewQuerySerializer, query_params(request))
        require_project(request, params["project_id"])
        return Response(overview_out(stats_overview(project_id=params["project_id"], period=params["period"])))
