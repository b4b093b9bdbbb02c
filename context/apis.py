from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from context.assembler import context_assemble
from context.serializers import ContextPacketSerializer, ContextRequestSchema, ContextRequestSerializer, validate_budget
from hakimem.auth import require_project
from hakimem.schema import errors


class ContextApi(APIView):
    """POST /v1/context: the ContextPacket for one LLM turn, and a trace of every decision behind it."""

    @extend_schema(summary="The ContextPacket for one LLM turn", request=ContextRequestSchema,
                   responses={200: ContextPacketSerializer, **errors(400, 404, 413, 415)},
                   description="400 budget_exceeded when budget_tokens is not a positive integer up to the cap.")
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
