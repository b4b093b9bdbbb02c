"""A project's settings (its categories, consent rules, conflict policy) and its subjects' consents: granted,
revoked from the next context call on (with erase: privacy.services)."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from facts.errors import ConsentNotFound
from facts.locks import lock_scopes
from facts.models import RESOLVED_BY_MAX, Consent, Project


def project_update(*, project_id: str, changes: dict) -> Project:
    """Create the project's row on its first change; `changes` holds validated fields of Project."""
    with transaction.atomic():
        project, _ = Project.objects.select_for_update().get_or_create(project_id=project_id)
        for name, value in changes.items():
            setattr(project, name, value)
        project.full_clean()
        project.save()
    return project


def consent_grant(*, project_id: str, subject_id: str, category: str, actor: str) -> tuple[Consent, bool]:
    """Grant a category; granting one already granted returns the current consent (created False)."""
    with transaction.atomic():
        lock_scopes([(project_id, subject_id)])
        current = Consent.objects.filter(
            project_id=project_id, subject_id=subject_id, category=category, revoked_at__isnull=True
        ).first()
        if current is not None:
            return current, False
        consent = Consent(
            project_id=project_id,
            subject_id=subject_id,
            category=category,
            granted_at=timezone.now(),
            granted_by=actor[:RESOLVED_BY_MAX],
        )
        consent.full_clean()
        consent.save()
        return consent, True


def consent_revoke(
    *, project_id: str, subject_id: str, category: str, actor: str, missing_ok: bool = False
) -> Consent | None:
    """Revoke a category from now on (the next context call already withholds it), under the scope's writers'
    lock. ConsentNotFound when there is no current consent, unless `missing_ok` (then None). Revoking with erase
    is privacy.services.consent_revoke, which calls this in the erasure's transaction."""
    with transaction.atomic():
        lock_scopes([(project_id, subject_id)])
        current = (
            Consent.objects.select_for_update()
            .filter(project_id=project_id, subject_id=subject_id, category=category, revoked_at__isnull=True)
            .first()
        )
        if current is None:
            if not missing_ok:
                raise ConsentNotFound(f"no current consent to {category!r}")
            return None
        current.revoked_at = timezone.now()
        current.revoked_by = actor[:RESOLVED_BY_MAX]
        current.save(update_fields=["revoked_at", "revoked_by"])
    return current
