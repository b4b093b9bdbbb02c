"""GET /v1/stats/overview: the numbers on a known set of context calls, the period, validation, scope."""

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from tests.conftest import OTHER_PROJECT, PROJECT, REQUEST_OVERHEAD_QUERIES, error_code
from tests.stats.conftest import SINCE, UNTIL
from tests.traces.factories import record_call

pytestmark = pytest.mark.django_db


def overview(api, project=PROJECT, expect=200, **params):
    response = api.get("/v1/stats/overview", {"project_id": project, **params})
    assert response.status_code == expect, response.content
    return response.json()


def test_overview_numbers_on_a_known_week(api, week):
    body = overview(api, since=SINCE, until=UNTIL)
    assert body["project_id"] == PROJECT and (body["since"], body["until"]) == (SINCE, UNTIL)
    assert body["context_calls"] == 4
    assert body["calls_injected"] == 3 and body["injection_rate"] == 0.75  # an episode alone is something served
    assert body["empty_reasons"] == {
        "scope_unknown": 0,
        "scope_empty": 0,
        "budget_too_small": 0,
        "all_blocked": 0,
        "no_relevant_memory": 1,
        "not_recorded": 0,
    }
    assert body["decisions_by_reason_code"] == {
        "included": 4,
        "multi_hop_expansion": 0,
        "over_budget": 1,
        "below_relevance_floor": 2,
        "conflict_open": 2,
        "volatility_expired": 0,
        "consent_missing": 0,
        "below_min_score": 0,
        "superseded_in_context": 0,
        "neighbouring_turn": 0,
    }
    assert body["mean_used_tokens"] == 47.5
    assert body["latency_ms"] == {"p50": 25.0, "p95": 38.5}  # percentile_cont over 10, 20, 30, 40
    assert body["active_facts"] == 8
    assert body["open_conflicts"]["count"] == 1
    assert body["open_conflicts"]["oldest_opened_at"] == "2026-02-15T00:00:00Z"
    expected_age = (timezone.now() - datetime(2026, 2, 15, tzinfo=UTC)).total_seconds()
    assert abs(body["open_conflicts"]["oldest_age_seconds"] - expected_age) < 60
    # tea (only over budget in the week), paris and lyon (blocked), old (served before the week)
    assert body["facts_never_served"] == 4


def test_hit_rate_is_the_deprecated_name_of_injection_rate(api, week):
    body = overview(api, since=SINCE, until=UNTIL)
    assert body["hit_rate"] == body["injection_rate"] == 0.75
    assert body["deprecated"] == {"hit_rate": "use injection_rate"}


def test_period_bounds_include_since_and_exclude_until(api, week):
    first_day = overview(api, since=SINCE, until="2026-03-02T00:00:00Z")
    assert first_day["context_calls"] == 1 and first_day["injection_rate"] == 1.0
    with_the_edges = overview(api, since="2026-02-28T23:59:59Z", until="2026-03-08T00:00:01Z")
    assert with_the_edges["context_calls"] == 6
    assert overview(api, since=SINCE, until=UNTIL)["context_calls"] == 4


def test_offsets_are_honoured(api, week):
    # 1 Mar 10:00 UTC is 11:00 in Paris: a period starting at 11:00+01:00 still holds the first call
    assert overview(api, since="2026-03-01T11:00:00+01:00", until="2026-03-01T11:00:01+01:00")["context_calls"] == 1
    assert overview(api, since="2026-03-01T11:00:01+01:00", until="2026-03-02T00:00:00Z")["context_calls"] == 0


def test_default_period_is_the_last_30_days(api):
    now = timezone.now()
    record_call(at=now - timedelta(days=1), latency_ms=12)
    record_call(at=now - timedelta(days=31), latency_ms=99)
    body = overview(api)
    assert body["context_calls"] == 1 and body["latency_ms"]["p50"] == 12.0
    since, until = (datetime.fromisoformat(body[k].replace("Z", "+00:00")) for k in ("since", "until"))
    assert until - since == timedelta(days=30) and abs((until - now).total_seconds()) < 60


def test_one_end_given_the_other_defaults(api):
    now = timezone.now()
    record_call(at=now - timedelta(days=1))
    record_call(at=now - timedelta(days=31))
    assert overview(api, since=(now - timedelta(days=40)).isoformat())["context_calls"] == 2  # until = now
    assert overview(api, until=(now - timedelta(days=29)).isoformat())["context_calls"] == 1  # since = 30 days before


def test_no_call_means_no_rate_rather_than_zero(api):
    body = overview(api, since=SINCE, until=UNTIL)
    assert body["context_calls"] == 0
    assert body["injection_rate"] is None and body["hit_rate"] is None and body["mean_used_tokens"] is None
    assert body["latency_ms"] == {"p50": None, "p95": None}
    assert set(body["decisions_by_reason_code"].values()) == {0} and set(body["empty_reasons"].values()) == {0}
    assert body["calls_injected"] == 0
    assert body["open_conflicts"] == {"count": 0, "oldest_opened_at": None, "oldest_age_seconds": None}


@pytest.mark.parametrize(
    "params, field",
    [
        ({"since": "2026-03-01T00:00:00"}, "since"),  # no offset: ambiguous
        ({"since": "yesterday"}, "since"),
        ({"until": "2026-13-01T00:00:00Z"}, "until"),
        ({"since": UNTIL, "until": SINCE}, "since"),
        ({"since": SINCE, "until": SINCE}, "since"),
        ({"since": "2025-01-01T00:00:00Z", "until": "2026-01-03T00:00:00Z"}, "until"),  # more than 366 days
        ({"from": SINCE}, "from"),
    ],
)
def test_bad_periods_are_refused_with_their_field(api, params, field):
    response = api.get("/v1/stats/overview", {"project_id": PROJECT, **params})
    assert response.status_code == 400 and error_code(response) == "invalid_request"
    assert field in {e["field"] for e in response.json()["error"]["details"]["errors"]}


@pytest.mark.parametrize("params", [{}, {"project_id": "not a scope id!"}])
def test_the_project_is_required(api, params):
    response = api.get("/v1/stats/overview", params)
    assert response.status_code == 400 and error_code(response) == "invalid_request"


def test_another_projects_stats_answer_404(api, other_api, week):
    response = other_api.get("/v1/stats/overview", {"project_id": PROJECT, "since": SINCE, "until": UNTIL})
    assert response.status_code == 404 and error_code(response) == "not_found"


def test_each_project_sees_only_its_own_numbers(other_api, week):
    body = overview(other_api, project=OTHER_PROJECT, since=SINCE, until=UNTIL)
    assert body["context_calls"] == 1 and body["latency_ms"]["p50"] == 999.0
    assert body["decisions_by_reason_code"]["included"] == 1
    assert body["active_facts"] == 1 and body["open_conflicts"]["count"] == 1 and body["facts_never_served"] == 0


def test_a_key_is_required(client):
    response = client.get("/v1/stats/overview", {"project_id": PROJECT})
    assert response.status_code == 401 and error_code(response) == "unauthenticated"


def test_the_overview_is_a_fixed_number_of_queries(api, week, django_assert_num_queries):
    # the rollup's mark, totals with decisions by reason code, latencies per bucket, the latencies at the
    # percentiles' ranks, facts never served, store
    with django_assert_num_queries(6 + REQUEST_OVERHEAD_QUERIES):
        overview(api, since=SINCE, until=UNTIL)
