import re

from django.core.exceptions import ValidationError

SCOPE_ID_MAX = 128  # project_id and subject_id, in every table that holds them and at the API's edge
SCOPE_ID_RE = re.compile(rf"^[A-Za-z0-9._:@-]{{1,{SCOPE_ID_MAX}}}$")
SCOPE_ID_HELP = f"1-{SCOPE_ID_MAX} characters: letters, digits and . _ : @ -"


def validate_scope_id(value: str) -> None:
    if not isinstance(value, str) or not SCOPE_ID_RE.match(value):
        raise ValidationError(f"must be {SCOPE_ID_HELP}")
