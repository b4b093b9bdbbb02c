"""The trace browser: what each context call was asked, what it served, and every decision behind it.
Read-only for everyone, superusers included: a trace is a record of what happened."""

from __future__ import annotations

import uuid
from datetime import date, datetime, time, timedelta
from datetime import timezone as dt_timezone

from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters, ShowFacets
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseNotAllowed
from django.template.response import TemplateResponse
from django.urls import path
from django.utils.text import Truncator

from facts.admin import conflicts as conflict_pages
from facts.admin import facts as fact_pages
from facts.models import ConflictSet, Fact
from hakimem.admin_filters import InputFilter, ProjectFilter, StaffProjectsMixin, SubjectFilter
from traces.models import Decision, DecisionKind, ReasonCode, Trace
from traces.selectors import fact_decision_counts, trace_decisions


class ReplayFilter(admin.SimpleListFilter):
    """Context calls, or the replays of them (POST /v1/inspect/{id}/replay, manage.py replay, the Replay buttons)."""

    title = "kind"
    parameter_name = "kind"

    def lookups(self, request, model_admin):
        return [("call", "context calls"), ("replay", "replays")]

    def queryset(self, request, queryset):
        if self.value() == "call":
            return queryset.filter(replay_of__isnull=True)
        if self.value() == "replay":
            return queryset.filter(replay_of__isnull=False)
        return queryset


class DayRangeFilter(InputFilter):
    """?since=YYYY-MM-DD&until=YYYY-MM-DD, both days included (UTC), as on the /stats/ pages, which link here
    with their period. Bounds on created_at itself, so the (project_id, created_at) index serves them."""

    title = "date (UTC)"
    parameters = ("since", "until")
    labels = ("from", "to")
    input_type = "date"

    def _day(self, name: str) -> datetime | None:
        raw = self.used_parameters.get(name)
        if not raw:
            return None
        try:
            day = date.fromisoformat(raw)
        except ValueError as exc:
            raise IncorrectLookupParameters(f"{name}: expected YYYY-MM-DD") from exc
        return datetime.combine(day, time.min, tzinfo=dt_timezone.utc)

    def queryset(self, request, queryset):
        since, until = self._day("since"), self._day("until")
        if since:
            queryset = queryset.filter(created_at__gte=since)
        if until and until.date() < date.max:  # the calendar's last day bounds nothing (and has no next day)
            queryset = queryset.filter(created_at__lt=until + timedelta(days=1))
        return queryset


class FactDecisionFilter(admin.ListFilter):
    """?fact=<id>[&decision=...][&reason_code=...]: the context calls that made that decision about a fact.
    The fact and conflict set pages link here; it shows only when used."""

    title = "decision about a fact"
    template = "admin/fact_decision_filter.html"
    parameters = ("fact", "decision", "reason_code")

    def __init__(self, request, params, model, model_admin):
        super().__init__(request, params, model, model_admin)
        for name in self.parameters:
            if name in params:
                self.used_parameters[name] = params.pop(name)[-1]
        try:
            self.fact_id = uuid.UUID(self.used_parameters["fact"]) if "fact" in self.used_parameters else None
        except ValueError as exc:
            raise IncorrectLookupParameters("fact: expected a fact id") from exc
        if self.used_parameters.get("decision", "") not in ("", *DecisionKind.values):
            raise IncorrectLookupParameters("decision: expected included, excluded or blocked")
        if self.used_parameters.get("reason_code", "") not in ("", *ReasonCode.values):
            raise IncorrectLookupParameters("reason_code: unknown reason code")

    def has_output(self):
        return self.fact_id is not None

    def expected_parameters(self):
        return list(self.parameters)

    def queryset(self, request, queryset):
        if self.fact_id is None:
            return queryset
        # -- uses: traces_decision_fact (fact_id, decision)
        decisions = Decision.objects.filter(fact_id=self.fact_id)
        for name in ("decision", "reason_code"):
            if self.used_parameters.get(name):
                decisions = decisions.filter(**{name: self.used_parameters[name]})
        return queryset.filter(id__in=decisions.values("trace_id"))

    def choices(self, changelist):
        fact = Fact.objects.filter(id=self.fact_id).only("id", "text").first()
        yield {
            "fact": fact,
            "decision": self.used_parameters.get("decision"),
            "reason_code": self.used_parameters.get("reason_code"),
            "clear": changelist.get_query_string(remove=self.parameters),
        }


@admin.register(Trace)
class TraceAdmin(StaffProjectsMixin, admin.ModelAdmin):
    list_display = ("created_at", "project_id", "subject_id", "query_text", "served", "tokens", "latency", "outcome")
    list_filter = (
        ProjectFilter,
        SubjectFilter,
        ReplayFilter,
        "status",
        "empty_reason",
        DayRangeFilter,
        FactDecisionFilter,
    )
    search_fields = ("query",)
    search_help_text = "Search in the query text of the context calls."
    ordering = ("-created_at",)
    # Traces are the largest table: no total count next to the filtered one, no facet counts.
    show_full_result_count = False
    show_facets = ShowFacets.NEVER

    def get_queryset(self, request):
        return super().get_queryset(request).defer("rendered", "timings", "warnings")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(description="query")
    def query_text(self, obj):
        return Truncator(obj.query).chars(80)

    @admin.display(description="served")
    def served(self, obj):
        return f"{obj.facts_served} fact{'s' * (obj.facts_served != 1)}, {obj.episodes_served} episode{'s' * (obj.episodes_served != 1)}"

    @admin.display(description="tokens / budget")
    def tokens(self, obj):
        return f"{obj.used_tokens} / {obj.budget_tokens}"

    @admin.display(description="latency", ordering="latency_ms")
    def latency(self, obj):
        return f"{obj.latency_ms:.1f} ms"

    @admin.display(description="outcome")
    def outcome(self, obj):
        outcome = f"{obj.status}, empty: {obj.empty_reason}" if obj.empty_reason else obj.status
        return f"{outcome} (replay)" if obj.replay_of else outcome

    # The trace page's "Replay" buttons run the assembler, a layer above: context's admin (context/admin.py)
    # extends this one with it. Here: no button.
    can_replay = False

    def replay(self, *, trace: Trace, as_of: str) -> dict:
        """The call run again (writing a replay trace, as the API does) and its diff, or {"error": why not}."""
        raise NotImplementedError

    def get_urls(self):
        replay = path(
            "<path:object_id>/replay/", self.admin_site.admin_view(self.replay_view), name="traces_trace_replay"
        )
        return [replay, *super().get_urls()]

    def replay_view(self, request, object_id):
        """POST as_of=now|original: the call run again (writing a replay trace, as the API does) and its diff."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        trace = self.get_object(request, unquote(object_id))
        if trace is None or not self.can_replay:
            raise Http404("No such trace")
        if not self.has_view_permission(request, trace):
            raise PermissionDenied
        as_of = "original" if request.POST.get("as_of") == "original" else "now"
        result = self.replay(trace=trace, as_of=as_of)
        for section in ("lost", "gained", "changed"):  # then and now side by side: one loop in the template
            for row in (result.get("diff") or {}).get(section, []):
                row["sides"] = [row["then"], row["now"]]
                row["decision"] = (row["now"] or row["then"])["decision"]  # the row's colour: where it stands now
        return TemplateResponse(
            request,
            "admin/traces/trace/replay.html",
            {
                **self.admin_site.each_context(request),
                "title": "Replay",
                "opts": self.opts,
                "original": trace,
                "as_of": as_of,
                "result": result,
                "diff": result.get("diff"),
            },
        )

    def change_view(self, request, object_id, form_url="", extra_context=None):
        trace = self.get_object(request, unquote(object_id))
        if trace is not None:
            extra_context = {
                **(extra_context or {}),
                "title": "Trace",
                "can_replay": self.can_replay and trace.replay_of is None,
                "decisions": trace_decisions(trace=trace),
                "timings": sorted(trace.timings.items(), key=lambda item: -item[1]),
            }
        return super().change_view(request, object_id, form_url, extra_context)


class WithDecisionCounts:
    """The facts' pages (facts/admin/) with how context calls used each fact, from the decisions of this app."""

    def decision_counts(self, *, fact_ids) -> dict:
        return fact_decision_counts(fact_ids=fact_ids)


class FactAdmin(WithDecisionCounts, fact_pages.FactAdmin):
    pass


class ConflictSetAdmin(WithDecisionCounts, conflict_pages.ConflictSetAdmin):
    pass


admin.site.unregister(Fact)
admin.site.register(Fact, FactAdmin)
admin.site.unregister(ConflictSet)
admin.site.register(ConflictSet, ConflictSetAdmin)
