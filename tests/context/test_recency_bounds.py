"""Recency at the edges of time: any date the API accepts (years 1 to 9999 in UTC) and any documented override
(tau_days 0.01 to 3650, weights 0 to 1) is a context call and a replay answered 200. exp(-age / tau) underflowed
in PostgreSQL for an event of 1950 (or a replay's tau of one day over a scope of old items), and every context call
of the subject failed with a 500 until it was erased."""

import itertools
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from context import retrieval
from tests.conftest import PROJECT
from traces.selectors import access_frequency
from traces.services import item_access_prune

pytestmark = pytest.mark.django_db

# The earliest and latest moments the serializers accept (hakimem.fields.AwareDateTimeField: years 1 to 9999, UTC).
EARLIEST = datetime(1, 1, 1, tzinfo=timezone.utc)
LATEST = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=timezone.utc)
EDGES = [EARLIEST, LATEST, datetime(1900, 1, 1, tzinfo=timezone.utc), datetime(1950, 3, 1, tzinfo=timezone.utc)]

bounded = hypothesis_settings(
    max_examples=25, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
)
moments = st.sampled_from(EDGES) | st.datetimes(
    min_value=EARLIEST.replace(tzinfo=None), max_value=LATEST.replace(tzinfo=None), timezones=st.just(timezone.utc)
)
taus = st.sampled_from([0.01, 1.0, 30.0, 3650.0]) | st.floats(0.01, 3650.0)
weights = st.sampled_from([0.0, 5e-324, 1e-300, 0.05, 1.0]) | st.floats(0.0, 1.0)
subjects = (f"dora-{n}" for n in itertools.count())


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def write(api, path, body, status=201):
    response = api.post(path, {"project_id": PROJECT, **body}, format="json")
    assert response.status_code == status, response.content[:300]
    return response.json()


def context(api, subject, **asks):
    return write(api, "/v1/context", {"subject_id": subject, "query": "When was Dora born?", **asks}, status=200)


def replay(api, trace_id, **body):
    response = api.post(f"/v1/inspect/{trace_id}/replay", body, format="json")
    assert response.status_code == 200, response.content[:300]
    return response.json()


def test_an_event_of_1950_and_a_fact_of_1900_leave_the_subject_answerable(api):
    # given a birth in 1950 (an event) and a fact valid since 1900
    write(api, "/v1/events", {"subject_id": "dora", "text": "Dora was born.", "occurred_at": "1950-03-01T00:00:00Z"})
    write(
        api,
        "/v1/facts",
        {"subject_id": "dora", "text": "Dora's family has farmed in Brittany.", "valid_from": "1900-01-01T00:00:00Z"},
    )
    # when the subject is asked about, then replayed with the shortest time constants
    packet = context(api, "dora")
    tiered = context(api, "dora", tiers=True)
    # then every call answers, and the old items are served with a recency of (nearly) nothing
    assert {e["text"] for e in packet["episodes"]} == {"Dora was born."}
    assert packet["facts"] and tiered["trace_id"]
    for tau in (0.01, 1):
        for as_of in ("now", "original"):
            replay(api, packet["trace_id"], as_of=as_of, overrides={"tau_days": tau})


@bounded
@given(moment=moments, tau=taus, w_recency=weights, w_similarity=weights)
def test_any_accepted_date_and_any_documented_override_is_answered(api, moment, tau, w_recency, w_similarity):
    subject = next(subjects)
    write(api, "/v1/events", {"subject_id": subject, "text": "Dora was born in Quimper.", "occurred_at": iso(moment)})
    write(
        api,
        "/v1/facts",
        {"subject_id": subject, "text": "Dora's family farmed near Quimper.", "valid_from": iso(moment)},
    )
    write(
        api,
        "/v1/facts",
        {
            "subject_id": subject,
            "text": "Dora kept bees near Quimper.",
            "valid_from": iso(EARLIEST),
            "valid_to": iso(max(moment, EARLIEST + timedelta(seconds=1))),
        },
    )
    write(
        api,
        "/v1/facts",
        {
            "subject_id": subject,
            "text": "Dora sold honey in Quimper.",
            "valid_from": iso(moment),
            "valid_to": iso(LATEST),
        },
    )
    packet = context(api, subject)
    context(api, subject, tiers=True)
    for as_of in ("now", "original"):
        replay(
            api,
            packet["trace_id"],
            as_of=as_of,
            overrides={"tau_days": tau, "w_recency": w_recency, "w_similarity": w_similarity},
        )


def test_access_counts_decay_to_any_moment(api):
    # given an item served once
    write(
        api,
        "/v1/events",
        {"subject_id": "dora", "text": "Dora moved to Quimper.", "occurred_at": "2024-03-01T00:00:00Z"},
    )
    packet = context(api, "dora")
    [episode] = packet["episodes"]
    # when its count is read, and pruned, as of the last moment the API knows
    counts = access_frequency(project_id=PROJECT, subject_id="dora", item_ids=[episode["id"]], now=LATEST)
    pruned = item_access_prune(now=LATEST)
    # then it has decayed to (nearly) nothing and is pruned
    assert counts[episode["id"]] < 1e-300
    assert pruned["item_accesses_deleted"] == 1


def test_the_sql_weights_keep_the_order_and_never_underflow():
    # a power of two scales exactly; a non-zero weight is at least 1 once scaled, so no part in [5e-324, 1] vanishes
    assert retrieval.sql_weight(0.05) == 0.05 * 2.0**1000
    assert retrieval.sql_weight(0.0) == 0.0
    assert retrieval.sql_weight(5e-324) == 1.0
