"""Identity blocks: texts served first in every tiered context call, the project's own (subject '') and a subject's.

Written under their scope's writers' lock, (project, '') for the project-wide ones: a subject's erasure, which holds
its scope's, never misses one committed meanwhile, and a scope's name and block count are checked with no other
writer in between.
"""

from __future__ import annotations

from django.db import transaction

from facts.errors import ServiceValidationError
from facts.locks import lock_scopes
from facts.models import IDENTITY_BLOCKS_PER_SCOPE, IdentityBlock


IDENTITY_FIELDS = ("name", "text", "position", "enabled", "metadata")


def _check_identity_name(*, project_id: str, subject_id: str, name: str, exclude_id=None) -> None:
    taken = IdentityBlock.objects.filter(project_id=project_id, subject_id=subject_id, name=name)
    if exclude_id is not None:
        taken = taken.exclude(id=exclude_id)
    if taken.exists():
        scope = "the project" if not subject_id else "this subject"
        raise ServiceValidationError(
            [{"index": None, "field": "name", "message": f"{scope} already has an identity block named {name!r}"}]
        )


def identity_block_check_new(*, project_id: str, subject_id: str, name: str) -> None:
    """ServiceValidationError when the scope may not take a block of this name: the name is taken there, or
    the scope holds IDENTITY_BLOCKS_PER_SCOPE already. identity_block_create checks it again under the lock; a
    form asks first, to show the error beside its fields."""
    if IdentityBlock.objects.filter(project_id=project_id, subject_id=subject_id).count() >= IDENTITY_BLOCKS_PER_SCOPE:
        raise ServiceValidationError(
            [
                {
                    "index": None,
                    "field": "subject_id",
                    "message": f"a scope holds at most {IDENTITY_BLOCKS_PER_SCOPE} identity blocks",
                }
            ]
        )
    _check_identity_name(project_id=project_id, subject_id=subject_id, name=name)


def identity_block_create(
    *,
    project_id: str,
    subject_id: str,
    name: str,
    text: str,
    position: int = 0,
    enabled: bool = True,
    metadata: dict | None = None,
) -> IdentityBlock:
    """A new block for the project (subject_id '') or a subject; its name is unique in that scope, and a scope
    holds at most IDENTITY_BLOCKS_PER_SCOPE."""
    with transaction.atomic():
        lock_scopes([(project_id, subject_id)])
        identity_block_check_new(project_id=project_id, subject_id=subject_id, name=name)
        return IdentityBlock.objects.create(
            project_id=project_id,
            subject_id=subject_id,
            name=name,
            text=text,
            position=position,
            enabled=enabled,
            metadata=metadata or {},
        )


def identity_block_update(*, block: IdentityBlock, changes: dict) -> IdentityBlock:
    """Edit IDENTITY_FIELDS in place. Raises IdentityBlock.DoesNotExist when it was deleted (or its subject
    erased) meanwhile."""
    with transaction.atomic():
        lock_scopes([(block.project_id, block.subject_id)])
        block = IdentityBlock.objects.select_for_update().get(id=block.id, project_id=block.project_id)
        if "name" in changes and changes["name"] != block.name:
            _check_identity_name(
                project_id=block.project_id, subject_id=block.subject_id, name=changes["name"], exclude_id=block.id
            )
        fields = [name for name in IDENTITY_FIELDS if name in changes]
        for name in fields:
            setattr(block, name, changes[name])
        if fields:
            block.save(update_fields=[*fields, "updated_at"])
    return block


def identity_block_delete(*, block: IdentityBlock) -> None:
    """Deleting one already gone is harmless."""
    with transaction.atomic():
        lock_scopes([(block.project_id, block.subject_id)])
        IdentityBlock.objects.filter(id=block.id).delete()
