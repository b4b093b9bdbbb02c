"""Bearer-key authentication for /v1/, and the scope rule: a key sees only its own project."""
from __future__ import annotations

from dataclasses import dataclass

from rest_framework import authentication, exceptions

from hakimem.errors import ApiError, ErrorCode
from hakimem.models import ApiKey, hash_key
from hakimem.rowsecurity import scoped_by_project


@dataclass(frozen=True)
class ApiClient:
    """The caller behind a key (request.user for API views)."""

    key_id: int
    project_id: str
    is_authenticated: bool = True


def _live_keys(raw: str):
    return ApiKey.objects.filter(key_hash=hash_key(raw.strip()), revoked_at__isnull=True).only("id", "project_id")


def api_key_lookup(raw: str) -> ApiKey | None:
    """The live (not revoked) key behind a raw secret, or None: what the MCP server asks, in its own process
    (the REST API's authentication also scopes the request's row security in the same statement)."""
    return _live_keys(raw).first()


class ApiKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        scheme, _, raw = header.partition(" ")
        if scheme != self.keyword or not raw.strip():
            raise exceptions.AuthenticationFailed("Use 'Authorization: Bearer <key>'.")
        # Row-level security: the rest of the request sees only the key's project, set by the same statement
        # that finds the key (one round trip fewer on every call).
        key = scoped_by_project(_live_keys(raw)).first()
        if key is None:
            raise exceptions.AuthenticationFailed("Unknown or revoked API key.")
        return ApiClient(key_id=key.id, project_id=key.project_id), key

    def authenticate_header(self, request):
        return 'Bearer realm="hakimem"'


def require_project(request, project_id: str) -> None:
    """A key may only touch its own project. Any other project answers exactly like a missing object,
    so a caller learns nothing about what exists elsewhere."""
    if request.user.project_id != project_id:
        raise ApiError(ErrorCode.NOT_FOUND, "Not found.", status_code=404)
