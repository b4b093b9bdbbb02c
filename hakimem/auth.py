"""Bearer-key authentication for /v1/, and the scope rule: a key sees only its own project."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db import connection
from rest_framework import authentication, exceptions

from hakimem.errors import ApiError, ErrorCode
from hakimem.models import hash_key


@dataclass(frozen=True)
class ApiClient:
    """The caller behind a key (request.user for API views)."""

    key_id: int
    project_id: str
    is_authenticated: bool = True


def _live_key(raw: str, *, scope: bool) -> ApiClient | None:
    """The live (not revoked) key behind a raw secret, or None. The API role cannot read the keys: the database
    function hakimem_api_key_find answers for this one hash (hakimem/migrations/0005). With `scope`, the rest of
    the request's transaction sees only the key's project (row security), set by the same statement."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT key_id, key_project_id FROM hakimem_api_key_find(%s, %s)", [hash_key(raw.strip()), scope]
        )
        row = cursor.fetchone()
    return ApiClient(key_id=row[0], project_id=row[1]) if row else None


def api_key_lookup(raw: str) -> ApiClient | None:
    """What the MCP server asks, in its own process, before it opens a tool's transaction."""
    return _live_key(raw, scope=False)


class ApiKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        scheme, _, raw = header.partition(" ")
        if scheme != self.keyword or not raw.strip():
            raise exceptions.AuthenticationFailed("Use 'Authorization: Bearer <key>'.")
        # Row-level security: the rest of the request sees only the key's project, set by the statement that
        # finds the key: RowSecurityMiddleware's first (which also takes the role), else this one's.
        # Outside a scoped request (row security off, a test calling the authentication directly) it sets nothing.
        django_request = getattr(request, "_request", request)
        if getattr(django_request, "hakimem_key_hash", None) == hash_key(raw.strip()):
            found = django_request.hakimem_key
            client = ApiClient(key_id=found[0], project_id=found[1]) if found else None
        else:
            client = _live_key(raw, scope=connection.in_atomic_block and settings.HAKI_ROW_SECURITY)
        if client is None:
            raise exceptions.AuthenticationFailed("Unknown or revoked API key.")
        return client, client.key_id

    def authenticate_header(self, request):
        return 'Bearer realm="hakimem"'


def require_project(request, project_id: str) -> None:
    """A key may only touch its own project. Any other project answers exactly like a missing object,
    so a caller learns nothing about what exists elsewhere."""
    if request.user.project_id != project_id:
        raise ApiError(ErrorCode.NOT_FOUND, "Not found.", status_code=404)
