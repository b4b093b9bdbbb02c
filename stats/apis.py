from rest_framework.response import Response
from rest_framework.views import APIView

from hakimem.auth import require_project
from hakimem.serializers import query_params, validated
from stats.selectors import stats_overview
from stats.serializers import OverviewQuerySerializer, overview_out


class StatsOverviewApi(APIView):
    """GET /v1/stats/overview: how memory was used by the project's context calls in a period, and the state
    of its store now (active facts, open conflicts)."""

    def get(self, request):
        params = validated(OverviewQuerySerializer, query_params(request))
        require_project(request, params["project_id"])
        return Response(overview_out(stats_overview(project_id=params["project_id"], period=params["period"])))
