"""Content-Security-Policy on every response (Django 5.2 has none of its own): settings.HAKI_CSP, or none when it
is empty.

The default admits what the admin, the /stats/ pages and Swagger UI at /docs load, all from this origin: their
scripts are files (no inline script: /docs loads its start-up script from its own URL), their styles are files and
inline <style> blocks (the admin's, the stats pages', Swagger UI's), their images files and data: URLs (Swagger UI's
icons). A script injected into a page does not run.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import MiddlewareNotUsed

DEFAULT_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
)


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response):
        if not settings.HAKI_CSP:
            raise MiddlewareNotUsed
        self.get_response = get_response
        self.policy = settings.HAKI_CSP

    def __call__(self, request):
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", self.policy)
        return response
