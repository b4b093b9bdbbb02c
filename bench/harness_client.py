"""The API client the quality harnesses (bench/recall.py, bench/locomo.py) write and ask
through, as any client would: in process (DRF's APIClient on the configured database), with a key of its own
for the run's throw-away project. Django must be set up before it is called."""

from __future__ import annotations


def client_with_own_key(project_id: str, *, label: str):
    """A client holding a fresh key for `project_id`; returns (client, cleanup), cleanup deleting the key."""
    from rest_framework.test import APIClient

    from hakimem.models import ApiKey
    from hakimem.services import api_key_create

    key, raw = api_key_create(project_id=project_id, label=label)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client, lambda: ApiKey.objects.filter(id=key.id).delete()
