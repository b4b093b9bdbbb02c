"""Used by `make run`: make sure a development API key and an admin user exist, and say how to use them.

Their secrets live in var/ (git-ignored, mode 600) so every run can print them; this is for a developer's
machine only and is never what a production deployment runs.
"""
import os
import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand

from hakimem.models import ApiKey, hash_key
from hakimem.services import api_key_create

DEV_PROJECT = "demo"


def _secret_file(name: str, make) -> tuple[str, bool]:
    path = settings.VAR_DIR / name
    if path.exists():
        return path.read_text().strip(), False
    value = make()
    path.write_text(value)
    path.chmod(0o600)
    return value, True


class Command(BaseCommand):
    help = "Ensure a development API key and admin user exist, and print how to use them."

    def handle(self, *args, **options):
        settings.VAR_DIR.mkdir(parents=True, exist_ok=True)
        key_path = settings.VAR_DIR / "dev_api_key"
        raw = key_path.read_text().strip() if key_path.exists() else ""
        if not raw or not ApiKey.objects.filter(key_hash=hash_key(raw), revoked_at__isnull=True).exists():
            _, raw = api_key_create(project_id=DEV_PROJECT, label="development key (make run)")
            key_path.write_text(raw)
            key_path.chmod(0o600)
        password, _ = _secret_file("dev_admin_password", lambda: secrets.token_urlsafe(12))
        User = get_user_model()
        admin, created = User.objects.get_or_create(username="admin", defaults={"is_staff": True, "is_superuser": True})
        if created or not admin.check_password(password):
            admin.set_password(password)
            admin.is_staff = admin.is_superuser = True
            admin.save()
        call_command("ensure_roles", verbosity=0)  # the groups `curators` and `product-owners`
        port = os.environ.get("HAKI_PORT", "8000")
        base = f"http://127.0.0.1:{port}"
        self.stdout.write(
            "\n".join(
                [
                    "",
                    "hakimem development server",
                    f"  API key (project {DEV_PROJECT!r}): {raw}",
                    f"  admin:   {base}/admin/   login: admin / {password}",
                    f"  stats:   {base}/stats/",
                    f"  health:  curl {base}/v1/health",
                    f"  try:     curl -H 'Authorization: Bearer {raw}' -H 'Content-Type: application/json' \\",
                    f"             -d '{{\"project_id\":\"{DEV_PROJECT}\",\"subject_id\":\"alice\",\"text\":\"Alice is allergic to peanuts.\"}}' {base}/v1/facts",
                    "",
                ]
            )
        )
