"""What the store's admin pages share: read-only pages whose changes run services, yes/no filters, and the
forms of rows written by people, validated by the API's serializers."""

from __future__ import annotations

import json

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import flatten_fieldsets, unquote
from django.core.exceptions import PermissionDenied
from django.db import models
from django.http import HttpResponseNotAllowed
from django.shortcuts import redirect
from django.urls import reverse

from hakimem.admin_filters import StaffProjectsMixin
from hakimem.fields import flatten_errors, storable_text
from hakimem.serializers import StrictSerializer

NO_SAVE_BUTTONS = {"show_save": False, "show_save_and_continue": False, "show_save_and_add_another": False}


class DecisionCountsMixin:
    """How context calls used each fact: {fact id: [a count per decision (included, excluded, blocked) with its
    reason codes]}. None here: the decisions are traces', whose admin (traces/admin.py) extends these pages."""

    def decision_counts(self, *, fact_ids) -> dict:
        return {fact_id: [] for fact_id in fact_ids}


class ReadOnlyAdmin(admin.ModelAdmin):
    """Shows rows; changes them only through the custom views below, which call services."""

    def get_readonly_fields(self, request, obj=None):
        return flatten_fieldsets(self.get_fieldsets(request, obj))

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def change_view(self, request, object_id, form_url="", extra_context=None):
        if request.method == "POST":  # no field to save (a save would rewrite the row as it is)
            return HttpResponseNotAllowed(["GET"])
        # Nothing to save and no form to change: "Fact", not "Change fact".
        context = {**NO_SAVE_BUTTONS, "title": self.opts.verbose_name.capitalize(), **(extra_context or {})}
        return super().change_view(request, object_id, form_url, context)

    def _object_or_redirect(self, request, object_id):
        obj = self.get_object(request, unquote(object_id))
        if obj is None:
            return None, self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        if not self.has_change_permission(request, obj):
            raise PermissionDenied
        return obj, None

    def _erased(self, request):
        messages.error(request, f"This {self.opts.verbose_name} no longer exists: its subject was erased.")
        return redirect(reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_changelist"))

    def _change_url(self, obj) -> str:
        return reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_change", args=[obj.pk])


class YesNoFilter(admin.SimpleListFilter):
    def lookups(self, request, model_admin):
        return [("yes", "Yes"), ("no", "No")]

    def condition(self):
        raise NotImplementedError

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.filter(self.condition())
        if self.value() == "no":
            return queryset.exclude(self.condition())
        return queryset


class StorableJSONFormField(forms.JSONField):
    """Shows a refused value back with its unpaired surrogates escaped: written raw, the page could not be encoded."""

    def prepare_value(self, value):
        text = super().prepare_value(value)
        return (
            text
            if isinstance(value, forms.fields.InvalidJSONInput) or storable_text(text)
            else json.dumps(value, cls=self.encoder)
        )


class ProjectRowForm(forms.ModelForm):
    """A row of a project the signed-in person may act on (row security would refuse the write of any other: a 500),
    validated by the API's serializer of the same write: what the API refuses, the form refuses (a category twice,
    metadata 40 levels deep, U+0000 in a JSON field, which the database cannot store: a 500)."""

    allowed_projects: list[str] | None = None  # set per request by ProjectFormAdmin.get_form; None: every project
    add_serializer: type[StrictSerializer] | None = None  # the API's, on add and on change
    change_serializer: type[StrictSerializer] | None = None

    def clean_project_id(self):
        project_id = self.cleaned_data["project_id"]
        if self.allowed_projects is not None and project_id not in self.allowed_projects:
            raise forms.ValidationError("You may not write to this project.")
        return project_id

    def clean(self):
        cleaned = super().clean()
        serializer_class = self.add_serializer if self.instance._state.adding else self.change_serializer
        if serializer_class is None:
            return cleaned
        names = serializer_class().fields
        data = {name: value for name, value in cleaned.items() if name in names}
        if "subject_id" in data:  # the form's empty subject is the API's null: the whole project
            data["subject_id"] = data["subject_id"] or None
        api = serializer_class(data=data, partial=True)  # a field the form already refused is not sent
        if not api.is_valid():
            for error in flatten_errors(api.errors):
                field = (error["field"] or "").split(".")[0]
                self.add_error(field if field in data else None, error["message"])
        return cleaned


class ProjectFormAdmin(StaffProjectsMixin, admin.ModelAdmin):
    """Rows of a project, written through a form (ProjectRowForm) that knows the signed-in person's projects."""

    formfield_overrides = {models.JSONField: {"form_class": StorableJSONFormField}}

    def get_form(self, request, obj=None, change=False, **kwargs):
        from hakimem.models import staff_projects

        form = super().get_form(request, obj, change=change, **kwargs)
        return type(form.__name__, (form,), {"allowed_projects": staff_projects(request.user)})
