from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.db import models

from hakimem.validators import SCOPE_ID_MAX, validate_scope_id


def hash_key(raw_key: str) -> str:
    # Keys are 256-bit random tokens, so a fast hash is enough: there is nothing to brute-force.
    return hashlib.sha256(raw_key.encode("utf-8")).hexdigest()


class ApiKey(models.Model):
    """A bearer key for one project. Only its hash is stored; the key itself is shown once at creation."""

    project_id = models.CharField(max_length=SCOPE_ID_MAX, validators=[validate_scope_id])
    label = models.CharField(max_length=200, blank=True, default="")
    prefix = models.CharField(max_length=16, help_text="The key's first characters, to recognise it in lists.")
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "API key"

    def __str__(self) -> str:
        state = "revoked" if self.revoked_at else "active"
        return f"{self.prefix}… ({self.project_id}, {state})"

    @classmethod
    def new_raw_key(cls) -> str:
        return "hk_" + secrets.token_urlsafe(32)


class StaffProjectAccess(models.Model):
    """A project a staff user is limited to. A staff user with none of these rows sees every project (as
    before projects could be given); with some, only those, in the admin and on /stats/. Superusers always
    see every project."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="project_access")
    project_id = models.CharField(max_length=SCOPE_ID_MAX, validators=[validate_scope_id])

    class Meta:
        verbose_name = "staff project access"
        verbose_name_plural = "staff project access"
        constraints = [models.UniqueConstraint(fields=["user", "project_id"], name="hakimem_staff_project_unique")]

    def __str__(self) -> str:
        return f"{self.user} → {self.project_id}"


def staff_projects(user) -> list[str] | None:
    """The projects `user` may see in the admin and on /stats/: None for every project, else a list (empty:
    none). Read once per request (cached on the user object)."""
    if user.is_superuser:
        return None
    cached = getattr(user, "_hakimem_projects", False)
    if cached is not False:
        return cached
    projects = sorted(StaffProjectAccess.objects.filter(user_id=user.pk).values_list("project_id", flat=True))
    user._hakimem_projects = projects or None
    return user._hakimem_projects


class RateCounter(models.Model):
    """Hits of one bucket (an API key, a username, an address) in one fixed time window: the counters behind
    API rate limits and the admin's sign-in lockout (hakimem/ratelimit.py), shared by every server process.
    UNLOGGED (no write-ahead log: a crash forgets them, which only forgives)."""

    bucket = models.CharField(max_length=200)
    window = models.BigIntegerField(help_text="The window's start, in seconds since the epoch.")
    hits = models.IntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["bucket", "window"], name="hakimem_ratecounter_bucket_window")]
