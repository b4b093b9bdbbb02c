import re

from django.core.exceptions import ValidationError

SCOPE_ID_RE = re.compile(r"^[A-Za-z0-9._:@-]{1,128}$")
SCOPE_ID_HELP = "1-128 characters: letters, digits and . _ : @ -"


def validate_scope_id(value: str) -> None:
    if not isinstance(value, str) or not SCOPE_ID_RE.match(value):
        raise ValidationError(f"must be {SCOPE_ID_HELP}")
