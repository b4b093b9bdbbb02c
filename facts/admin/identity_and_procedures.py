"""Identity blocks and procedures: written by people, here as through the API (a form validates with the API's
serializer, a service writes)."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.db import transaction

from facts import identity_and_procedure_serializers
from facts.admin.base import ProjectFormAdmin, ProjectRowForm
from facts.errors import ServiceValidationError
from facts.identity import (
    IDENTITY_FIELDS,
    identity_block_check_new,
    identity_block_create,
    identity_block_delete,
    identity_block_update,
)
from facts.models import IdentityBlock, Procedure, ProcedureStatus
from facts.procedures import PROCEDURE_FIELDS, procedure_create, procedure_retract, procedure_update
from hakimem.admin_filters import ProjectFilter, SubjectFilter
from hakimem.tokens import estimate_tokens


class _ScopedForm(ProjectRowForm):
    """A block's or a procedure's scope: a project the signed-in person may act on, and an empty subject for the
    whole project."""


class ScopedWriteAdmin(ProjectFormAdmin):
    """Adds and edits through the app's services, as the API does: a form validates, a service writes."""

    def get_readonly_fields(self, request, obj=None):
        return ("project_id", "subject_id", "created_at", "updated_at") if obj else ("created_at", "updated_at")

    def _service_errors(self, form, exc: ServiceValidationError) -> None:
        for error in exc.errors:
            form.add_error(error["field"] if error["field"] in form.fields else None, error["message"])


class IdentityBlockForm(_ScopedForm):
    class Meta:
        model = IdentityBlock
        fields = ("project_id", "subject_id", "name", "text", "position", "enabled", "metadata")
        widgets = {"text": forms.Textarea(attrs={"rows": 6})}

    add_serializer, change_serializer = (
        identity_and_procedure_serializers.IdentityBlockInSerializer,
        identity_and_procedure_serializers.IdentityBlockPatchSerializer,
    )

    def clean(self):
        cleaned = super().clean()
        if self.instance._state.adding and not self.errors:
            try:
                identity_block_check_new(
                    project_id=cleaned["project_id"], subject_id=cleaned.get("subject_id", ""), name=cleaned["name"]
                )
            except ServiceValidationError as exc:
                raise forms.ValidationError([e["message"] for e in exc.errors]) from exc
        return cleaned


@admin.register(IdentityBlock)
class IdentityBlockAdmin(ScopedWriteAdmin):
    """Always-on texts. Saved by identity_block_create / identity_block_update, deleted by identity_block_delete."""

    form = IdentityBlockForm
    list_display = ("name", "scope", "project_id", "position", "enabled", "tokens", "updated_at")
    list_filter = (ProjectFilter, SubjectFilter, "enabled")
    search_fields = ("name", "text")
    ordering = ("project_id", "subject_id", "position", "name")

    @admin.display(description="subject", ordering="subject_id")
    def scope(self, obj):
        return obj.subject_id or "(whole project)"

    @admin.display(description="tokens")
    def tokens(self, obj):
        return estimate_tokens(obj.text)

    def save_model(self, request, obj, form, change):
        if change:
            changes = {name: form.cleaned_data[name] for name in form.changed_data if name in IDENTITY_FIELDS}
            saved = identity_block_update(block=obj, changes=changes)
        else:
            saved = identity_block_create(**{name: form.cleaned_data[name] for name in IdentityBlockForm.Meta.fields})
        obj.pk, obj.created_at, obj.updated_at = saved.pk, saved.created_at, saved.updated_at

    def delete_model(self, request, obj):
        identity_block_delete(block=obj)

    def delete_queryset(self, request, queryset):
        for block in queryset:
            identity_block_delete(block=block)


class ProcedureForm(_ScopedForm):
    class Meta:
        model = Procedure
        fields = ("project_id", "subject_id", "title", "text", "category", "importance", "metadata")
        widgets = {"text": forms.Textarea(attrs={"rows": 10})}

    add_serializer, change_serializer = (
        identity_and_procedure_serializers.ProcedureInSerializer,
        identity_and_procedure_serializers.ProcedurePatchSerializer,
    )


@admin.register(Procedure)
class ProcedureAdmin(ScopedWriteAdmin):
    """Workflows. Saved by procedure_create / procedure_update (which embed them), retracted by procedure_retract,
    as DELETE /v1/procedures/{id} does; never deleted here (erasure deletes)."""

    form = ProcedureForm
    list_display = ("title", "scope", "project_id", "status", "category", "importance", "updated_at")
    list_filter = (ProjectFilter, SubjectFilter, "status", "category")
    search_fields = ("title", "text")
    ordering = ("-updated_at", "-id")
    actions = ["retract"]

    def get_queryset(self, request):
        return super().get_queryset(request).defer("embedding", "search_vector")

    def get_readonly_fields(self, request, obj=None):
        if obj is not None and obj.status != ProcedureStatus.ACTIVE:  # only an active procedure changes
            return (*ProcedureForm.Meta.fields, "status", "created_at", "updated_at")
        return (*super().get_readonly_fields(request, obj), "status")

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(description="subject", ordering="subject_id")
    def scope(self, obj):
        return obj.subject_id or "(whole project)"

    def save_model(self, request, obj, form, change):
        if change:
            changes = {name: form.cleaned_data[name] for name in form.changed_data if name in PROCEDURE_FIELDS}
            saved = procedure_update(procedure=obj, changes=changes)
        else:
            saved = procedure_create(**{name: form.cleaned_data[name] for name in ProcedureForm.Meta.fields})
        obj.pk, obj.status, obj.created_at, obj.updated_at = saved.pk, saved.status, saved.created_at, saved.updated_at

    @admin.action(description="Retract the selected procedures (never served again)", permissions=["change"])
    def retract(self, request, queryset):
        for procedure in queryset.filter(status=ProcedureStatus.ACTIVE):
            try:
                # The log entry (it holds the title) commits with the retraction, under the scope's lock: before
                # an erasure, which deletes it, or not at all.
                with transaction.atomic():
                    procedure_retract(procedure=procedure)
                    self.log_change(request, procedure, "Retracted.")
            except Procedure.DoesNotExist:  # its scope was erased meanwhile
                continue
        messages.success(request, "The selected procedures are retracted.")
