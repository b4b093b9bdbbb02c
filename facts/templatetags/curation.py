"""What the admin's home page tells a curator before anything else: how many conflict sets wait for them."""

from django import template
from django.urls import reverse

from facts.models import ConflictSet, ConflictStatus
from hakimem.models import staff_projects

register = template.Library()


@register.inclusion_tag("admin/facts/open_conflicts.html", takes_context=True)
def open_conflicts(context):
    """The open conflict sets in the projects the signed-in user may see (none shown without the permission)."""
    user = context["request"].user
    if not user.has_perm("facts.view_conflictset"):
        return {"count": 0}
    sets = ConflictSet.objects.filter(status=ConflictStatus.OPEN)
    allowed = staff_projects(user)
    if allowed is not None:
        sets = sets.filter(project_id__in=allowed)
    return {
        "count": sets.count(),
        "url": reverse("admin:facts_conflictset_changelist") + f"?status__exact={ConflictStatus.OPEN.value}",
    }
