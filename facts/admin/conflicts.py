"""The conflict sets' pages: the curators' queue, the members side by side, and resolving a set through
conflict_resolve, as POST /v1/conflicts/{id}/resolve does."""

from __future__ import annotations

from datetime import timedelta

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.db import transaction
from django.db.models import Case, Exists, OuterRef, Prefetch, Value, When
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path
from django.utils import timezone
from django.utils.text import Truncator

from facts import selectors
from facts.admin.base import DecisionCountsMixin, ReadOnlyAdmin
from facts.conflicts import conflict_resolve
from facts.errors import ConflictNotOpen, ServiceValidationError
from facts.models import CONFLICT_NOTE_MAX, ConflictMember, ConflictSet, ConflictStatus, Event, Fact, FactStatus
from hakimem.admin_filters import ProjectFilter, StaffProjectsMixin, SubjectFilter


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
