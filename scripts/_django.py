"""Boot Django for a script run from the repository root (python scripts/<name>.py)."""
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def setup() -> None:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hakimem.settings")
    import django

    django.setup()


def throwaway_client(project_id: str, label: str):
    """An API client with a fresh key of its own for `project_id`, as the quality harnesses write and ask like
    any client; returns (client, cleanup), cleanup deleting the key."""
    from rest_framework.test import APIClient

    from hakimem.models import ApiKey
    from hakimem.services import api_key_create

    key, raw = api_key_create(project_id=project_id, label=f"{label} (deleted when the run ends)")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client, lambda: ApiKey.objects.filter(id=key.id).delete()
