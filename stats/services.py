"""The two roles of people who use hakimem without writing code, as Django groups with their permissions.

Curators resolve conflicts and read traces in the admin; product owners read /stats/ and nothing in the
admin (their access is the group itself, checked by stats.views). `ensure_roles` (and bootstrap_dev) call
roles_ensure; it adds what is missing and never removes a permission an administrator gave.
"""

from __future__ import annotations

from django.contrib.auth.models import Group, Permission
from django.db import transaction

CURATORS = "curators"
PRODUCT_OWNERS = "product-owners"

ROLES: dict[str, list[str]] = {
    CURATORS: [
        "facts.view_conflictset",
        "facts.change_conflictset",  # change: resolve through conflict_resolve
        "facts.view_fact",
        "facts.change_fact",  # change: retract through fact_retract
        "facts.view_event",  # a fact's source event and a trace's episodes link to it
        # written by people, through the same services as the API
        "facts.view_identityblock",
        "facts.add_identityblock",
        "facts.change_identityblock",
        "facts.delete_identityblock",
        "facts.view_procedure",
        "facts.add_procedure",
        "facts.change_procedure",  # change: retract too
        "traces.view_trace",
    ],
    PRODUCT_OWNERS: [],
}


class MissingPermission(LookupError):
    pass


@transaction.atomic
def roles_ensure() -> dict[str, list[str]]:
    """Create the groups and give each its permissions; returns the permissions each group lacked."""
    added: dict[str, list[str]] = {}
    for name, codes in ROLES.items():
        group, _ = Group.objects.get_or_create(name=name)
        have = {f"{p.content_type.app_label}.{p.codename}" for p in group.permissions.select_related("content_type")}
        missing = [code for code in codes if code not in have]
        for code in missing:
            app_label, codename = code.split(".")
            permission = Permission.objects.filter(content_type__app_label=app_label, codename=codename).first()
            if permission is None:  # permissions are created by migrate
                raise MissingPermission(f"permission {code} does not exist; run `manage.py migrate` first")
            group.permissions.add(permission)
        added[name] = missing
    return added
