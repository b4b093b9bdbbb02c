"""DELETE /v1/subjects/{id} and DELETE /v1/subjects/{id}/consents/{category}: the erasure and the revocation that
reach every app (privacy.services). The other consent endpoints are the store's (facts/apis.py)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from facts.apis import actor_of, subject_in_path
from facts.errors import ConsentNotFound
from facts.serializers import (
    ErasedSerializer,
    ScopeQuerySerializer,
)
from facts.project_serializers import (
    ConsentRevokedSerializer,
    ConsentRevokeQuerySerializer,
    consent_out,
)
from hakimem.auth import require_project
from hakimem.errors import ApiError, ErrorCode
from hakimem.schema import errors
from hakimem.serializers import query_params, validated
from privacy.services import consent_revoke, subject_erase


class SubjectEraseApi(APIView):
    @extend_schema(
        summary="Erase a subject's whole scope, everywhere",
        parameters=[
            ScopeQuerySerializer,
            OpenApiParameter("subject_id", str, OpenApiParameter.PATH, pattern=r"^[A-Za-z0-9._:@-]{1,128}$"),
        ],
        responses={200: ErasedSerializer, **errors(400, 404)},
    )
    def delete(self, request, subject_id):
        params = validated(ScopeQuerySerializer, query_params(request))
        subject_in_path(subject_id)
        require_project(request, params["project_id"])
        counts = subject_erase(project_id=params["project_id"], subject_id=subject_id)
        return Response({"project_id": params["project_id"], "subject_id": subject_id, "deleted": counts})


class SubjectConsentDetailApi(APIView):
    """DELETE: revoke a category from the next context call on; with erase=true, also erase its facts."""

    @extend_schema(
        summary="Revoke consent to a category; erase=true also erases its facts",
        parameters=[
            ConsentRevokeQuerySerializer,
            OpenApiParameter("subject_id", str, OpenApiParameter.PATH, pattern=r"^[A-Za-z0-9._:@-]{1,128}$"),
            OpenApiParameter("category", str, OpenApiParameter.PATH),
        ],
        responses={200: ConsentRevokedSerializer, **errors(400, 404)},
    )
    def delete(self, request, subject_id, category):
        params = validated(ConsentRevokeQuerySerializer, query_params(request))
        subject_in_path(subject_id)
        require_project(request, params["project_id"])
        try:
            consent, receipt = consent_revoke(
                project_id=params["project_id"],
                subject_id=subject_id,
                category=category,
                actor=actor_of(request),
                erase=params["erase"] == "true",
            )
        except ConsentNotFound as exc:
            raise ApiError(
                ErrorCode.NOT_FOUND, f"No current consent to this category ({exc}).", status_code=404
            ) from exc
        return Response({"consent": consent_out(consent) if consent else None, "erased": receipt})
