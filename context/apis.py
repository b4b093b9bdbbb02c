from rest_framework.response import Response
from rest_framework.views import APIView

from context.assembler import context_assemble
from context.serializers import ContextRequestSerializer, validate_budget
from hakimem.auth import require_project


class ContextApi(APIView):
    """POST /v1/context: the ContextPacket for one LLM turn, and a trace of every decision behind it."""

    def post(self, request):
        data = request.data if isinstance(request.data, dict) else {}
        budget = validate_budget(data)
        serializer = ContextRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        params = serializer.validated_data
        require_project(request, params["project_id"])
        packet = context_assemble(
            project_id=params["project_id"], subject_id=params["subject_id"], query=params["query"], budget_tokens=budget
        )
        return Response(packet)
