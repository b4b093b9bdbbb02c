from django.db import connection
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from django.conf import settings


class HealthApi(APIView):
    """No auth: the database answers, the vector extension is there, which embedder is configured."""

    authentication_classes: list = []
    permission_classes = [AllowAny]

    def get(self, request):
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
                row = cursor.fetchone()
            database, vector = "ok", (row[0] if row else None)
        except Exception:  # health must answer even when the database does not
            database, vector = "unreachable", None
        healthy = database == "ok" and vector is not None
        return Response(
            {
                "status": "ok" if healthy else "unhealthy",
                "database": database,
                "vector_extension": vector,
                "embedder": settings.HAKI_EMBED_PROVIDER,
                "embed_dim": settings.HAKI_EMBED_DIM,
            },
            status=200 if healthy else 503,
        )
