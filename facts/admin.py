"""The curators' admin for the memory store: facts, episodes, conflict sets, identity blocks and procedures.

Facts, episodes and conflict sets are never written through a model form: every field is read-only, and the two
things a curator does run the services the API runs (conflict_resolve for a conflict set, fact_retract for a
fact). Adding and deleting them are off: facts come from applications (POST /v1/facts, which embeds them) and
erasure is DELETE /v1/subjects. Identity blocks and procedures are written by people: their forms validate, and
the services the API calls save them (identity_block_create, procedure_update, ...).

A curator also asks why a fact was or was not served, and the answer is in traces.Decision, a layer above
this app: traces' admin (traces/admin.py) extends the fact and conflict set pages with their counts
(DecisionCountsMixin.decision_counts). So no module of facts imports traces.
"""

from __future__ import annotations

import json
from datetime import timedelta

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import flatten_fieldsets, unquote
from django.core.exceptions import PermissionDenied
from django.db import models, transaction
from django.db.models import BooleanField, Case, Exists, ExpressionWrapper, OuterRef, Prefetch, Value, When
from django.http import HttpResponseNotAllowed
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.text import Truncator

from facts import selectors, serializers
from facts.conflicts import conflict_resolve
from facts.consent import project_update
from facts.errors import ConflictNotOpen, ServiceValidationError
from facts.identity import (
    IDENTITY_FIELDS,
    identity_block_check_new,
    identity_block_create,
    identity_block_delete,
    identity_block_update,
)
from facts.procedures import PROCEDURE_FIELDS, procedure_create, procedure_retract, procedure_update
from facts.writes import fact_retract
from facts.models import (
    CONFLICT_NOTE_MAX,
    ConflictMember,
    ConflictSet,
    ConflictStatus,
    Consent,
    Event,
    Fact,
    FactStatus,
    IdentityBlock,
    Procedure,
    ProcedureStatus,
    Project,
)
from hakimem.admin_filters import ProjectFilter, StaffProjectsMixin, SubjectFilter
from hakimem.fields import flatten_errors, storable_text
from hakimem.serializers import StrictSerializer
from hakimem.tokens import estimate_tokens

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


class ExpiredFilter(YesNoFilter):
    title = "volatility expired"
    parameter_name = "expired"

    def condition(self):
        return selectors.expired_q()


class InOpenConflictFilter(YesNoFilter):
    title = "in an open conflict"
    parameter_name = "in_open_conflict"

    def condition(self):
        return selectors.in_open_conflict_q()


@admin.register(Fact)
class FactAdmin(DecisionCountsMixin, StaffProjectsMixin, ReadOnlyAdmin):
    list_display = (
        "fact",
        "subject_id",
        "project_id",
        "status",
        "kind",
        "category",
        "volatility",
        "expired",
        "in_open_conflict",
        "recorded_from",
    )
    list_filter = (
        ProjectFilter,
        SubjectFilter,
        "status",
        "kind",
        "category",
        "volatility",
        ExpiredFilter,
        InOpenConflictFilter,
    )
    search_fields = ("text",)
    search_help_text = "Search in the facts' text."
    ordering = ("-recorded_from", "-id")
    fieldsets = (
        (None, {"fields": ("text", "status", "superseded_by", ("project_id", "subject_id"))}),
        (
            "Kind and validity",
            {"fields": (("kind", "category"), ("importance", "volatility"), ("valid_from", "valid_to"))},
        ),
        ("Recorded", {"fields": (("recorded_from", "recorded_to"), "last_confirmed_at", "source_event", "metadata")}),
    )

    def get_queryset(self, request):
        # Never load the 384-dim embedding to show a list; expiry is computed now, per request.
        return (
            super()
            .get_queryset(request)
            .defer("embedding", "search_vector")
            .annotate(
                is_expired=ExpressionWrapper(selectors.expired_q(), output_field=BooleanField()),
                is_in_open_conflict=ExpressionWrapper(selectors.in_open_conflict_q(), output_field=BooleanField()),
            )
        )

    @admin.display(description="fact", ordering="text")
    def fact(self, obj):
        return Truncator(obj.text).chars(100)

    @admin.display(description="expired", boolean=True, ordering="is_expired")
    def expired(self, obj):
        return obj.is_expired

    @admin.display(description="open conflict", boolean=True, ordering="is_in_open_conflict")
    def in_open_conflict(self, obj):
        return obj.is_in_open_conflict

    def get_urls(self):
        retract = path(
            "<path:object_id>/retract/", self.admin_site.admin_view(self.retract_view), name="facts_fact_retract"
        )
        return [retract, *super().get_urls()]

    def change_view(self, request, object_id, form_url="", extra_context=None):
        fact = self.get_object(request, unquote(object_id))
        if fact is not None:
            extra_context = {
                **(extra_context or {}),
                "decisions": self.decision_counts(fact_ids=[fact.id])[fact.id],
                "versions": selectors.fact_history(fact=fact),
                "conflict_sets": fact.conflict_sets.order_by("-opened_at"),
                "can_retract": fact.status == FactStatus.ACTIVE and self.has_change_permission(request, fact),
            }
        return super().change_view(request, object_id, form_url, extra_context)

    def retract_view(self, request, object_id):
        """GET asks for confirmation; POST retracts through fact_retract, as DELETE /v1/facts/{id} does."""
        fact, missing = self._object_or_redirect(request, object_id)
        if missing:
            return missing
        if request.method == "POST":
            if fact.status == FactStatus.ACTIVE:
                try:
                    # The log entry (it holds the fact's text) commits with the retraction, under the scope's lock:
                    # before an erasure, which deletes it, or not at all.
                    with transaction.atomic():
                        fact_retract(fact=fact)
                        self.log_change(request, fact, "Retracted.")
                except Fact.DoesNotExist:
                    return self._erased(request)
                messages.success(request, "The fact is retracted: it will not be served again.")
            return redirect(self._change_url(fact))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "original": fact,
            "title": "Retract this fact?",
        }
        return TemplateResponse(request, "admin/facts/fact/retract.html", context)


@admin.register(Event)
class EventAdmin(StaffProjectsMixin, ReadOnlyAdmin):
    list_display = ("text", "project_id", "subject_id", "occurred_at", "extraction_status")
    list_filter = (ProjectFilter, SubjectFilter, "extraction_status")
    search_fields = ("text",)
    ordering = ("-occurred_at", "-id")
    fields = (
        "text",
        ("project_id", "subject_id"),
        "occurred_at",
        "recorded_at",
        "metadata",
        ("extraction_status", "extraction_attempts", "extraction_error"),
        "extraction_fact_ids",
    )

    def get_queryset(self, request):
        return super().get_queryset(request).defer("embedding", "search_vector")


class AgeFilter(admin.SimpleListFilter):
    title = "age"
    parameter_name = "age"
    BANDS = {  # value: (label, opened at least this long ago, opened less than this long ago)
        "day": ("less than a day", None, timedelta(days=1)),
        "week": ("1 to 7 days", timedelta(days=1), timedelta(days=7)),
        "month": ("7 to 30 days", timedelta(days=7), timedelta(days=30)),
        "older": ("more than 30 days", timedelta(days=30), None),
    }

    def lookups(self, request, model_admin):
        return [(value, label) for value, (label, _, _) in self.BANDS.items()]

    def queryset(self, request, queryset):
        if self.value() not in self.BANDS:
            return queryset
        _, at_least, less_than = self.BANDS[self.value()]
        now = timezone.now()
        if at_least:
            queryset = queryset.filter(opened_at__lte=now - at_least)
        if less_than:
            queryset = queryset.filter(opened_at__gt=now - less_than)
        return queryset


class ConflictResolveForm(forms.Form):
    ACTIONS = {
        "keep": "Keep the ticked facts",
        "dismiss": "Dismiss",
        "retract_all": "Retract all",
    }
    DONE = {
        "keep": "Conflict set resolved: the kept facts are served again, the others are superseded.",
        "dismiss": "Conflict set dismissed: its facts are served again.",
        "retract_all": "Conflict set resolved: its facts are retracted.",
    }
    action = forms.ChoiceField(choices=list(ACTIONS.items()))
    keep = forms.MultipleChoiceField(required=False)  # in the members' order: the first kept one supersedes
    note = forms.CharField(
        required=False, max_length=CONFLICT_NOTE_MAX, widget=forms.Textarea(attrs={"rows": 3, "cols": 60})
    )

    def __init__(self, data, *, members: list[dict]):
        super().__init__(data)
        self.fields["keep"].choices = [(str(m["id"]), m["text"]) for m in members]

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("action") == "keep" and not cleaned.get("keep"):
            raise forms.ValidationError("Tick the fact or facts to keep first.")
        if cleaned.get("action") != "keep":
            cleaned["keep"] = []
        return cleaned


@admin.register(ConflictSet)
class ConflictSetAdmin(DecisionCountsMixin, StaffProjectsMixin, ReadOnlyAdmin):
    list_display = ("conflict", "subject_id", "project_id", "status", "signal", "age", "resolved_by")
    list_filter = (ProjectFilter, SubjectFilter, "status", AgeFilter)
    search_fields = ("facts__text",)  # shows the search box; get_search_results does the search
    search_help_text = "Search in the text of the facts in conflict."
    # Open sets first: they are the curators' queue.
    ordering = (Case(When(status=ConflictStatus.OPEN, then=Value(0)), default=Value(1)).asc(), "-opened_at")
    fields = (
        "status",
        ("project_id", "subject_id"),
        ("signal", "similarity"),
        "signal_detail",
        "reading",
        "opened_at",
        ("resolved_at", "resolved_by"),
        "note",
    )

    def get_queryset(self, request):
        members = Fact.objects.only("id", "text").order_by("recorded_from", "id")
        return super().get_queryset(request).prefetch_related(Prefetch("facts", queryset=members))

    def get_search_results(self, request, queryset, search_term):
        # EXISTS rather than a join through the members: no duplicate rows, so no DISTINCT over the ordering.
        if not search_term:
            return queryset, False
        matching = ConflictMember.objects.filter(conflict_set=OuterRef("pk"), fact__text__icontains=search_term)
        return queryset.filter(Exists(matching)), False

    @admin.display(description="facts in conflict")
    def conflict(self, obj):
        return " ↔ ".join(Truncator(f.text).chars(60) for f in obj.facts.all())

    @admin.display(description="open for", ordering="opened_at")
    def age(self, obj):
        end = obj.resolved_at or timezone.now()
        days = (end - obj.opened_at).days
        return f"{days} d" if days else "< 1 d"

    def get_urls(self):
        resolve = path(
            "<path:object_id>/resolve/", self.admin_site.admin_view(self.resolve_view), name="facts_conflictset_resolve"
        )
        return [resolve, *super().get_urls()]

    def _members(self, conflict_set: ConflictSet) -> list[dict]:
        """The member facts side by side: conflict_members plus a number to refer to each, the source event,
        and how often context calls served, excluded and blocked each one."""
        members = selectors.conflict_members(conflict_set=conflict_set)
        number = {str(m["id"]): i for i, m in enumerate(members, start=1)}
        decisions = self.decision_counts(fact_ids=[m["id"] for m in members])
        events = Event.objects.defer("embedding", "search_vector").in_bulk(
            [m["source_event_id"] for m in members if m["source_event_id"]]
        )
        for m in members:
            m["number"] = number[str(m["id"])]
            m["similar_to"] = [
                (number[other], sim) for other, sim in sorted(m["similarities"].items(), key=lambda o: number[o[0]])
            ]
            m["decisions"] = decisions[m["id"]]
            m["source_event"] = events.get(m["source_event_id"])
        return members

    def change_view(self, request, object_id, form_url="", extra_context=None):
        conflict_set = self.get_object(request, unquote(object_id))
        if conflict_set is not None:
            extra_context = {
                **(extra_context or {}),
                "members": self._members(conflict_set),
                "can_resolve": conflict_set.status == ConflictStatus.OPEN
                and self.has_change_permission(request, conflict_set),
            }
        return super().change_view(request, object_id, form_url, extra_context)

    def resolve_view(self, request, object_id):
        """GET (from the set's page): what the chosen action will do, and a note. POST: conflict_resolve, the
        service behind POST /v1/conflicts/{id}/resolve, with the curator as actor."""
        conflict_set, missing = self._object_or_redirect(request, object_id)
        if missing:
            return missing
        back = redirect(self._change_url(conflict_set))
        if conflict_set.status != ConflictStatus.OPEN:
            messages.error(request, f"This conflict set is already {conflict_set.status} ({conflict_set.resolved_by}).")
            return back
        members = self._members(conflict_set)
        form = ConflictResolveForm(request.POST if request.method == "POST" else request.GET, members=members)
        if not form.is_valid():
            for error in form.errors.values():
                messages.error(request, " ".join(error))
            return back
        action, keep = form.cleaned_data["action"], form.cleaned_data["keep"]
        if request.method == "POST":
            try:
                with transaction.atomic():  # the note is in the log entry: it commits with the resolution, as above
                    conflict_resolve(
                        conflict_set=conflict_set,
                        actor=f"user:{request.user.get_username()}",
                        keep=keep or None,
                        dismiss=action == "dismiss",
                        retract_all=action == "retract_all",
                        note=form.cleaned_data["note"],
                    )
                    self.log_change(
                        request, conflict_set, f"{form.ACTIONS[action]}. {form.cleaned_data['note']}".strip()
                    )
            except ConflictSet.DoesNotExist:
                return self._erased(request)
            except ConflictNotOpen:
                messages.error(request, "Someone resolved this conflict set meanwhile; nothing was changed.")
                return back
            except ServiceValidationError as exc:
                messages.error(request, str(exc))
                return back
            messages.success(request, form.DONE[action])
            return back
        kept = [m for m in members if str(m["id"]) in keep]
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "original": conflict_set,
            "title": f"{form.ACTIONS[action]}?",
            "form": form,
            "action": action,
            "members": members,
            "kept": kept,
            "superseded": [m for m in members if m not in kept and m["status"] == FactStatus.ACTIVE],
        }
        return TemplateResponse(request, "admin/facts/conflictset/resolve.html", context)


class StorableJSONFormField(forms.JSONField):
    """Shows a refused value back with its unpaired surrogates escaped: written raw, the page could not be encoded."""

    def prepare_value(self, value):
        text = super().prepare_value(value)
        return (
            text
            if isinstance(value, forms.fields.InvalidJSONInput) or storable_text(text)
            else json.dumps(value, cls=self.encoder)
        )


class _ProjectForm(forms.ModelForm):
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
    """Rows of a project, written through a form (_ProjectForm) that knows the signed-in person's projects."""

    formfield_overrides = {models.JSONField: {"form_class": StorableJSONFormField}}

    def get_form(self, request, obj=None, change=False, **kwargs):
        from hakimem.models import staff_projects

        form = super().get_form(request, obj, change=change, **kwargs)
        return type(form.__name__, (form,), {"allowed_projects": staff_projects(request.user)})


class ProjectForm(_ProjectForm):
    class Meta:
        model = Project
        fields = ("project_id", "consent_required", "consent_write_policy", "categories", "conflict_policy")

    add_serializer = change_serializer = serializers.ProjectPatchSerializer


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


# --- identity blocks and procedures: written by people, here as through the API ----------------------------


class _ScopedForm(_ProjectForm):
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

    add_serializer, change_serializer = serializers.IdentityBlockInSerializer, serializers.IdentityBlockPatchSerializer

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

    add_serializer, change_serializer = serializers.ProcedureInSerializer, serializers.ProcedurePatchSerializer


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
