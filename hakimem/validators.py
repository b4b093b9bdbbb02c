import re
import uuid

from django.core.exceptions import BadRequest, ValidationError

SCOPE_ID_MAX = 128  # project_id and subject_id, in every table that holds them and at the API's edge
# Matched whole (fullmatch): with re.match and a `$`, "alice\n" passed as a scope of its own, since `$` also
# matches before a final newline, and DELETE /v1/subjects/alice then left it behind.
SCOPE_ID_RE = re.compile(rf"[A-Za-z0-9._:@-]{{1,{SCOPE_ID_MAX}}}")
SCOPE_ID_HELP = f"1-{SCOPE_ID_MAX} characters: letters, digits and . _ : @ -"


def is_scope_id(value) -> bool:
    return isinstance(value, str) and SCOPE_ID_RE.fullmatch(value) is not None


def validate_scope_id(value: str) -> None:
    if not is_scope_id(value):
        raise ValidationError(f"must be {SCOPE_ID_HELP}")


class MalformedId(BadRequest):
    """A URL's id segment that is not an id: a 400 invalid_request (hakimem.errors.bad_request_view), not a 404."""


class IdConverter:
    """`<id:name>` in the API's URLs: any segment matches, so a malformed one is refused as such (MalformedId)
    instead of answering "no such endpoint"; a well-formed one reaches the view as a uuid.UUID."""

    regex = "[^/]+"

    def to_python(self, value: str) -> uuid.UUID:
        try:
            return uuid.UUID(value)
        except ValueError:
            raise MalformedId(f"{value[:80]!r} is not an id (a UUID).") from None

    def to_url(self, value) -> str:
        return str(value)
