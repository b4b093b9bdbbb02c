"""The product owners' pages: how a project's memory is used, read from the same selectors as
GET /v1/stats/overview. Read-only; for staff and the `product-owners` group."""

from __future__ import annotations

from datetime import date, timedelta
from urllib.parse import urlencode

from django import forms
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone

from hakimem.admin_filters import projects_visible
from hakimem.serializers import iso
from stats import charts, selectors
from stats.services import PRODUCT_OWNERS
from traces.models import DECISION_OF_REASON, EmptyReason

EMPTY_REASON_MEANINGS = {
    **{reason.value: reason.label for reason in EmptyReason},
    selectors.NOT_RECORDED: "traced before empty calls recorded their reason",
}


def can_see_stats(user) -> bool:
    return user.is_active and (user.is_staff or user.groups.filter(name=PRODUCT_OWNERS).exists())


class PeriodForm(forms.Form):
    """The project and whole UTC days, both ends included (what a date picker means)."""

    project = forms.ChoiceField()
    since = forms.DateField(label="From", widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(label="To", widget=forms.DateInput(attrs={"type": "date"}))

    def __init__(self, data, *, projects: list[str]):
        super().__init__(data)
        self.fields["project"].choices = [(p, p) for p in projects]

    def clean(self):
        cleaned = super().clean()
        since, until = cleaned.get("since"), cleaned.get("until")
        if since and until:
            # The calendar's last day would end the period past it: out of the calendar, before it is a Period.
            problem = (
                selectors.PERIOD_OUT_OF_CALENDAR
                if until == date.max
                else selectors.period_problem(selectors.days_period(since, until))
            )
            if problem == selectors.PERIOD_REVERSED:
                self.add_error("since", "The first day must not be after the last.")
            elif problem == selectors.PERIOD_TOO_LONG:
                self.add_error("until", f"Show at most {selectors.MAX_PERIOD.days} days.")
            elif problem == selectors.PERIOD_OUT_OF_CALENDAR:
                earliest, latest = selectors.PERIOD_EARLIEST.date(), selectors.PERIOD_LATEST.date() - timedelta(days=1)
                self.add_error("since" if since < earliest else "until", f"Show days from {earliest} to {latest}.")
        return cleaned


def _defaults(projects: list[str], today: date) -> dict:
    return {
        "project": projects[0] if projects else "",
        "since": (today - selectors.DEFAULT_PERIOD + timedelta(days=1)).isoformat(),  # 30 days, today included
        "until": today.isoformat(),
    }


def _admin_link(user, permission: str, url_name: str, params: dict) -> str | None:
    """A link into the admin for users who may follow it (a product owner may not)."""
    return f"{reverse(url_name)}?{urlencode(params)}" if user.has_perm(permission) else None


@login_required
def overview_page(request):
    if not can_see_stats(request.user):
        raise PermissionDenied
    projects = projects_visible(request, selectors.project_ids())  # a staff user limited to projects: theirs
    today = timezone.now().date()
    defaults = _defaults(projects, today)
    # Missing fields take their defaults, so the form always shows the period the page shows.
    form = PeriodForm({name: request.GET.get(name) or value for name, value in defaults.items()}, projects=projects)
    context = {"form": form, "projects": projects}
    if not projects:
        return render(request, "stats/overview.html", context)
    if form.is_valid():
        project_id, first, last = form.cleaned_data["project"], form.cleaned_data["since"], form.cleaned_data["until"]
    else:  # say what is wrong, and show the default period meanwhile
        project_id = form.cleaned_data.get("project") or defaults["project"]
        first, last = date.fromisoformat(defaults["since"]), today
    period = selectors.days_period(first, last)

    overview = selectors.stats_overview(project_id=project_id, period=period)
    days = selectors.calls_per_day(project_id=project_id, period=period)
    dates = [d.day for d in days]
    admin_period = {"project_id": project_id, "since": first.isoformat(), "until": last.isoformat()}
    context.update(
        project_id=project_id,
        first_day=first,
        last_day=last,
        overview=overview,
        days=days,
        injection_chart=charts.line_chart(
            title="Injection rate per day",
            days=dates,
            percent=True,
            series=[("injection rate", "line-rate", [d.injection_rate for d in days])],
        ),
        calls_chart=charts.bar_chart(
            title="Context calls per day", days=dates, values=[d.context_calls for d in days], unit="calls"
        ),
        latency_chart=charts.line_chart(
            title="Latency per day (ms)",
            days=dates,
            unit="ms",
            series=[
                ("p50", "line-p50", [d.latency_p50_ms for d in days]),
                ("p95", "line-p95", [d.latency_p95_ms for d in days]),
            ],
        ),
        # Every empty reason, and the calls traced before reasons were recorded only when there are some.
        empty_reasons=[
            {
                "code": code,
                "meaning": EMPTY_REASON_MEANINGS[code],
                "count": n,
                "share": n / overview.context_calls if overview.context_calls else None,
            }
            for code, n in overview.empty_reasons.items()
            if n or code != selectors.NOT_RECORDED
        ],
        reason_codes=[
            {
                "code": code,
                "decision": DECISION_OF_REASON[code].value,
                "count": n,
                "share": n / overview.decisions_total if overview.decisions_total else None,
            }
            for code, n in overview.decisions_by_reason_code.items()
        ],
        open_conflicts=selectors.open_conflicts_oldest_first(project_id=project_id),
        never_served=selectors.facts_never_served(project_id=project_id, period=period),
        subjects=selectors.subjects_by_calls(project_id=project_id, period=period),
        api_query=urlencode(
            {"project_id": project_id, "since": iso(period.since), "until": iso(period.until)}, safe=":"
        ),
        context_url=request.build_absolute_uri("/v1/context"),
        traces_link=_admin_link(request.user, "traces.view_trace", "admin:traces_trace_changelist", admin_period),
        conflicts_link=_admin_link(
            request.user,
            "facts.view_conflictset",
            "admin:facts_conflictset_changelist",
            {"project_id": project_id, "status__exact": "open"},
        ),
        can_view_conflicts=request.user.has_perm("facts.view_conflictset"),
        can_view_facts=request.user.has_perm("facts.view_fact"),
    )
    return render(request, "stats/overview.html", context)
