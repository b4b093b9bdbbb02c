"""Used by `make run`: make sure a development API key and an admin user exist, and say where their secrets are.

The secrets live in var/ (git-ignored), each in a file only its owner may read (mode 600), and are never printed:
`make run`'s output may end in a log that a collector keeps. This is for a developer's machine only and is never
what a production deployment runs.
"""

import os
import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand

from hakimem.models import ApiKey, hash_key
from hakimem.services import api_key_create

DEV_PROJECT = "demo"


def _write_private(path: Path, value: str) -> None:
    """value in path, readable by its owner only from the moment it exists (a file left by an older run too)."""
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as file:
        file.write(value)
    path.chmod(0o600)


def _shown(path: Path) -> str:
    """path as a command run from the checkout names it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


class Command(BaseCommand):
    help = "Ensure a development API key and admin user exist, and print where their secrets are."

    def handle(self, *args, **options):
        settings.VAR_DIR.mkdir(parents=True, exist_ok=True)
        key_path = settings.VAR_DIR / "dev_api_key"
        raw = key_path.read_text().strip() if key_path.exists() else ""
        if not raw or not ApiKey.objects.filter(key_hash=hash_key(raw), revoked_at__isnull=True).exists():
            _, raw = api_key_create(project_id=DEV_PROJECT, label="development key (make run)")
        _write_private(key_path, raw)
        password_path = settings.VAR_DIR / "dev_admin_password"
        password = password_path.read_text().strip() if password_path.exists() else ""
        password = password or secrets.token_urlsafe(12)
        _write_private(password_path, password)
        User = get_user_model()
        admin, created = User.objects.get_or_create(username="admin", defaults={"is_staff": True, "is_superuser": True})
        if created or not admin.check_password(password):
            admin.set_password(password)
            admin.is_staff = admin.is_superuser = True
            admin.save()
        call_command("ensure_roles", verbosity=0)  # the groups `curators` and `product-owners`
        port = os.environ.get("HAKI_PORT", "8000")
        base = f"http://127.0.0.1:{port}"
        key_file, password_file = _shown(key_path), _shown(password_path)
        self.stdout.write(
            "\n".join(
                [
                    "",
                    "hakimem development server, for a laptop: a development admin and API key, no task worker",
                    "  (to deploy: docs/deploy.md)",
                    f"  API key (project {DEV_PROJECT!r}): in {key_file}",
                    f"  admin:   {base}/admin/   login: admin, password in {password_file}",
                    f"  stats:   {base}/stats/",
                    f"  health:  curl {base}/v1/health",
                    f"  try:     curl -H \"Authorization: Bearer $(cat {key_file})\" -H 'Content-Type: application/json' \\",
                    f'             -d \'{{"project_id":"{DEV_PROJECT}","subject_id":"alice","text":"Alice is allergic to peanuts."}}\' {base}/v1/facts',
                    "",
                ]
            )
        )
