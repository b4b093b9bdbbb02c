"""A project's settings (saved through project_update, as PATCH /v1/project does) and its subjects' consents."""

from __future__ import annotations

from django.contrib import admin

from facts import project_serializers
from facts.admin.base import ProjectFormAdmin, ProjectRowForm, ReadOnlyAdmin
from facts.consent import project_update
from facts.models import Consent, Project
from hakimem.admin_filters import ProjectFilter, StaffProjectsMixin


class ProjectForm(ProjectRowForm):
    class Meta:
        model = Project
        fields = ("project_id", "consent_required", "consent_write_policy", "categories", "conflict_policy")

    add_serializer = change_serializer = project_serializers.ProjectPatchSerializer


@admin.register(Project)
class ProjectAdmin(ProjectFormAdmin):
    """A project's settings; saved through project_update, as PATCH /v1/project does."""

    form = ProjectForm
    list_display = ("project_id", "consent_required", "consent_write_policy", "conflict_policy", "updated_at")
    fields = ("project_id", "consent_required", "consent_write_policy", "categories", "conflict_policy")

    def get_readonly_fields(self, request, obj=None):
        return ("project_id",) if obj else ()

    def save_model(self, request, obj, form, change):
        changes = {name: form.cleaned_data[name] for name in self.fields if name != "project_id"}
        project_update(project_id=obj.project_id, changes=changes)


@admin.register(Consent)
class ConsentAdmin(StaffProjectsMixin, ReadOnlyAdmin):
    """Grants and revocations as subjects made them through the API: read only here."""

    list_display = ("subject_id", "project_id", "category", "granted_at", "revoked_at")
    list_filter = (ProjectFilter, "category")
    search_fields = ("subject_id",)
    fields = ("project_id", "subject_id", "category", "granted_at", "granted_by", "revoked_at", "revoked_by")
