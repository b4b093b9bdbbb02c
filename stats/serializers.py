from __future__ import annotations

from django.utils import timezone
from rest_framework import serializers

from hakimem.fields import AwareDateTimeField, ScopeIdField
from hakimem.serializers import StrictSerializer, iso
from stats.selectors import (
    DEFAULT_PERIOD,
    MAX_PERIOD,
    PERIOD_EARLIEST,
    PERIOD_LATEST,
    PERIOD_OUT_OF_CALENDAR,
    PERIOD_REVERSED,
    PERIOD_TOO_LONG,
    Overview,
    Period,
    period_problem,
)


class OverviewQuerySerializer(StrictSerializer):
    """?project_id=&since=&until=: ISO 8601 with an offset. until defaults to now, since to 30 days before
    until."""

    project_id = ScopeIdField()
    since = AwareDateTimeField(
        required=False,
        help_text=f"before until, at most {MAX_PERIOD.days} days before it, "
        f"from {iso(PERIOD_EARLIEST)}; default 30 days before until",
    )
    until = AwareDateTimeField(
        required=False,
        help_text=f"after since, at most {MAX_PERIOD.days} days after it, up to {iso(PERIOD_LATEST)}; default now",
    )

    def validate(self, attrs):
        until = attrs.get("until") or timezone.now()
        try:
            period = Period(since=attrs.get("since") or until - DEFAULT_PERIOD, until=until)
        except OverflowError:  # until in the first 30 days of year 1
            raise serializers.ValidationError({"until": ["must leave room for the default period before it"]}) from None
        problem = period_problem(period)
        if problem == PERIOD_REVERSED:
            raise serializers.ValidationError({"since": ["must be before until"]})
        if problem == PERIOD_TOO_LONG:
            raise serializers.ValidationError({"until": [f"the period may span at most {MAX_PERIOD.days} days"]})
        if problem == PERIOD_OUT_OF_CALENDAR:
            field = "since" if period.since < PERIOD_EARLIEST else "until"
            raise serializers.ValidationError(
                {field: [f"the period must lie between {iso(PERIOD_EARLIEST)} and {iso(PERIOD_LATEST)}"]}
            )
        return {"project_id": attrs["project_id"], "period": period}


def _round(value, digits):
    return None if value is None else round(value, digits)


def overview_out(overview: Overview) -> dict:
    rate = _round(overview.injection_rate, 4)
    return {
        "project_id": overview.project_id,
        "since": iso(overview.period.since),
        "until": iso(overview.period.until),
        "context_calls": overview.context_calls,
        "calls_injected": overview.calls_injected,
        "injection_rate": rate,
        "hit_rate": rate,
        "deprecated": {"hit_rate": "use injection_rate"},
        "empty_reasons": overview.empty_reasons,
        "decisions_by_reason_code": overview.decisions_by_reason_code,
        "mean_used_tokens": _round(overview.mean_used_tokens, 1),
        "latency_ms": {"p50": _round(overview.latency_p50_ms, 3), "p95": _round(overview.latency_p95_ms, 3)},
        "active_facts": overview.active_facts,
        "open_conflicts": {
            "count": overview.open_conflicts,
            "oldest_opened_at": iso(overview.oldest_open_conflict_at),
            "oldest_age_seconds": (
                int(overview.oldest_open_conflict_age.total_seconds()) if overview.oldest_open_conflict_age else None
            ),
        },
        "facts_never_served": overview.facts_never_served,
    }
