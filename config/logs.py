"""What the server's logs show of a request: its URL without subject ids (unless HAKI_LOG_SUBJECT_IDS is on), and
the traceback of a crash outside the API's own error handler (the admin's, the stats pages', a middleware's).

A subject id is personal data: in the path of /v1/subjects/<subject_id>, and in the query strings of the API's
lists (?subject_id=) and the admin's filters and searches (?subject_id__exact=, ?q=). A log collector keeps what
gunicorn's access log and Django's error log write, so both write `-` in their place.
"""

from __future__ import annotations

import logging
import os
from urllib.parse import unquote, unquote_plus

from gunicorn.glogging import Logger

REDACTED = "-"


def subject_ids_logged() -> bool:
    return os.environ.get("HAKI_LOG_SUBJECT_IDS", "off").strip().lower() in ("1", "true", "yes", "on")


def _private(name: str) -> bool:
    return name.startswith("subject_id") or name == "q"


def redacted_query(query: str) -> str:
    """query (a=1&b=2) with the values of subject ids and admin searches replaced by -."""
    pairs = []
    for pair in query.split("&"):
        name, equals, _ = pair.partition("=")
        pairs.append(f"{name}={REDACTED}" if equals and _private(unquote_plus(name)) else pair)
    return "&".join(pairs)


def redacted_url(url: str) -> str:
    """url (a path, or a whole URL as in a Referer) with the segment after /subjects/ and the private query values
    replaced by -."""
    path, question, query = url.partition("?")
    segments = path.split("/")
    for index in range(1, len(segments)):
        if unquote(segments[index - 1]) == "subjects" and segments[index]:
            segments[index] = REDACTED
    return "/".join(segments) + (question + redacted_query(query) if question else "")


class AccessLogger(Logger):
    """gunicorn's logger (config/gunicorn.py), its access log's request line, path, query and referer redacted."""

    def atoms(self, resp, req, environ, request_time):
        atoms = super().atoms(resp, req, environ, request_time)
        if subject_ids_logged():
            return atoms
        method, _, rest = atoms["r"].partition(" ")
        uri, _, protocol = rest.rpartition(" ")
        atoms["r"] = f"{method} {redacted_url(uri)} {protocol}"
        atoms["U"] = redacted_url(atoms["U"] or "")
        atoms["q"] = redacted_query(atoms["q"] or "")
        atoms["f"] = redacted_url(atoms["f"])
        return atoms


class UncaughtErrors(logging.Filter):
    """For django.request: only a crash's record (it carries the traceback), its path redacted. Django also logs
    every 4xx and 5xx response it sees by its status and path: the access log has those, and the API's own 500s
    are logged with their traceback by hakimem.errors."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.exc_info:
            return False
        if not subject_ids_logged():
            record.args = tuple(redacted_url(arg) if isinstance(arg, str) else arg for arg in record.args or ())
        return True
