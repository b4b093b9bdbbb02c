from rest_framework.response import Response
from rest_framework.views import APIView

from hakimem.errors import ApiError, ErrorCode
from traces.selectors import trace_get, trace_inspect


class InspectApi(APIView):
    """GET /v1/inspect/{trace_id}: what a context call was asked, what it served, how long each phase took,
    and every decision with its reason code and score parts."""

    def get(self, request, trace_id):
        trace = trace_get(project_id=request.user.project_id, trace_id=trace_id)
        if trace is None:
            raise ApiError(ErrorCode.NOT_FOUND, "No such trace.", status_code=404)
        return Response(trace_inspect(trace=trace))
