"""Test-only views that forget every project filter on purpose: row-level security must still hold."""

from django.db import connection
from django.http import JsonResponse
from django.urls import include, path
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from facts.models import ConflictMember, ConflictSet, Event, Fact, IdentityBlock, Procedure
from traces.models import Decision, Trace


def _everything() -> dict:
    """Every scoped table read without a filter, as a careless selector would."""
    return {
        "facts": sorted(Fact.objects.values_list("project_id", flat=True)),
        "events": sorted(Event.objects.values_list("project_id", flat=True)),
        "conflict_sets": sorted(ConflictSet.objects.values_list("project_id", flat=True)),
        "conflict_members": sorted(ConflictMember.objects.values_list("fact__project_id", flat=True)),
        "conflict_member_rows": ConflictMember.objects.count(),
        "traces": sorted(Trace.objects.values_list("project_id", flat=True)),
        "decisions": Decision.objects.count(),
        "identity_blocks": sorted(IdentityBlock.objects.values_list("project_id", flat=True)),
        "procedures": sorted(Procedure.objects.values_list("project_id", flat=True)),
    }


class UnscopedApi(APIView):
    def get(self, request):
        return Response(_everything())

    def patch(self, request):
        """Rewrites every fact's text, as a forgotten filter on an update would."""
        return Response({"updated": Fact.objects.update(text="overwritten")})


class UnscopedOpenApi(UnscopedApi):
    """No key needed: the request's project is never set."""

    authentication_classes: list = []
    permission_classes = [AllowAny]


def unscoped_page(request):
    return JsonResponse(_everything())


class ConnectionScopeApi(APIView):
    def get(self, request):
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_user, coalesce(current_setting('hakimem.project_id', true), '')")
            user, project = cursor.fetchone()
        return Response({"user": user, "project": project})


urlpatterns = [
    path("v1/test/unscoped", UnscopedApi.as_view()),
    path("v1/test/unscoped-open", UnscopedOpenApi.as_view()),
    path("stats/test/unscoped", unscoped_page),
    path("v1/test/connection", ConnectionScopeApi.as_view()),
    path("", include("config.urls")),
]
