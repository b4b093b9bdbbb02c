from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from hakimem.models import ApiKey, hash_key


@transaction.atomic
def api_key_create(*, project_id: str, label: str = "") -> tuple[ApiKey, str]:
    """Create a key for `project_id`; returns the row and the raw key, which is never stored or shown again."""
    raw = ApiKey.new_raw_key()
    key = ApiKey(project_id=project_id, label=label, prefix=raw[:10], key_hash=hash_key(raw))
    key.full_clean()
    key.save()
    return key, raw


def api_key_revoke(*, key: ApiKey) -> ApiKey:
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])
    return key
