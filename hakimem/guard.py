"""What no view can read, refused before Django or any view reads the request.

- charset_guard (WSGI, around Django in config/wsgi.py): a Content-Type charset that names no text encoding
  (rot13, hex, base64 are codecs Python knows, but not ones that turn bytes into text) or no codec at all. Django
  decodes the query string with the first kind while it builds the request, before any middleware: the error
  escaped Django and gunicorn answered its own HTML 500. It ignored the second kind and read the body as UTF-8,
  which the client did not say. 415, in the error contract on /v1/.
- RequestGuardMiddleware: U+0000 in the URL's path or in a query parameter. No text column and no lookup can hold
  it (psycopg refuses it: a 500 in the views and the admin filters that pass it on). 400.
"""

from __future__ import annotations

import codecs
import json

from django.http import HttpResponse, JsonResponse

from hakimem.errors import ErrorCode, error_body, is_api


def charset_problem(content_type: str) -> str | None:
    """Why the charset named by a Content-Type header cannot decode a request, or None (none named: UTF-8)."""
    for param in content_type.split(";")[1:]:
        name, _, value = param.partition("=")
        if name.strip().lower() != "charset":
            continue
        charset = value.strip().strip('"')
        try:
            info = codecs.lookup(charset)
        except LookupError:
            return f"unknown charset {charset[:40]!r}"
        if not info._is_text_encoding:
            return f"charset {charset[:40]!r} is not a text encoding"
    return None


def charset_guard(app):
    """The WSGI application `app`, answering 415 to a request whose charset no request can be read in."""

    def guarded(environ, start_response):
        problem = charset_problem(environ.get("CONTENT_TYPE", ""))
        if problem is None:
            return app(environ, start_response)
        message = f"The Content-Type names a charset no request can be read in ({problem}); send UTF-8."
        path = environ.get("PATH_INFO", "")
        if path == "/v1" or path.startswith("/v1/"):
            body, content_type = json.dumps(error_body(ErrorCode.UNSUPPORTED_MEDIA_TYPE, message)), "application/json"
        else:
            body, content_type = message, "text/plain; charset=utf-8"
        data = body.encode()
        start_response(
            "415 Unsupported Media Type", [("Content-Type", content_type), ("Content-Length", str(len(data)))]
        )
        return [data]

    return guarded


def _refused(request, message: str, errors: list[dict]):
    if is_api(request):
        return JsonResponse(error_body(ErrorCode.INVALID_REQUEST, message, {"errors": errors}), status=400)
    return HttpResponse(message, status=400, content_type="text/plain; charset=utf-8")


class RequestGuardMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if "\x00" in request.path_info:
            return _refused(
                request,
                "The URL path must not contain U+0000.",
                [{"index": None, "field": None, "message": "the path must not contain U+0000"}],
            )
        bad = sorted(
            {name for name, values in request.GET.lists() if "\x00" in name or any("\x00" in value for value in values)}
        )
        if bad:
            return _refused(
                request,
                "A query parameter must not contain U+0000.",
                [
                    {"index": None, "field": name.replace("\x00", "\\u0000"), "message": "must not contain U+0000"}
                    for name in bad
                ],
            )
        return self.get_response(request)
