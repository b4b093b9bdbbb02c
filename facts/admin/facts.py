"""The facts' pages (a fact's versions, its conflict sets, retracting it through fact_retract) and the events'."""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.db import transaction
from django.db.models import BooleanField, ExpressionWrapper
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path
from django.utils.text import Truncator

from facts import selectors
from facts.admin.base import DecisionCountsMixin, ReadOnlyAdmin, YesNoFilter
from facts.models import Event, Fact, FactStatus
from facts.writes import fact_retract
from hakimem.admin_filters import ProjectFilter, StaffProjectsMixin, SubjectFilter


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
