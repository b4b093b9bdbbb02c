"""Every context call is counted once: injected (it served something) or under the reason it came back empty. The
injection rate and the empty reasons add up to the calls, in the API, through the rollup and on the page."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from stats import selectors
from stats.rollup import stats_rollup
from tests.conftest import PROJECT
from tests.facts.factories import ConflictSetFactory, EventFactory, FactFactory
from tests.traces.factories import record_call
from traces.models import EmptyReason

pytestmark = pytest.mark.django_db


def ask(api, subject, query="What does she like?", **more):
    response = api.post(
        "/v1/context", {"project_id": PROJECT, "subject_id": subject, "query": query, **more}, format="json"
    )
    assert response.status_code == 200, response.content
    return response.json()


@pytest.fixture
def mixed_calls(api, settings):
    """Eleven context calls through the API: four served something (facts, an episode alone, a partial answer with
    a blocked pair), seven came back empty, at least once for each reason. Returns {reason or "injected": calls}."""
    FactFactory(subject_id="alice", text="Alice likes long walks along the river on Sunday mornings.")
    EventFactory(subject_id="erin", text="Erin went to a jazz concert.")
    ConflictSetFactory(
        subject_id="carol",
        members=[
            FactFactory(subject_id="carol", text="Carol lives in Peru."),
            FactFactory(subject_id="carol", text="Carol lives in Chile."),
        ],
    )
    FactFactory(subject_id="dave", text="Dave likes jazz.")
    ConflictSetFactory(
        subject_id="dave",
        members=[
            FactFactory(subject_id="dave", text="Dave lives in Peru."),
            FactFactory(subject_id="dave", text="Dave lives in Chile."),
        ],
    )
    FactFactory(subject_id="fred", text="Fred likes jazz.", status="retracted", recorded_to=timezone.now())
    packets = [
        ask(api, "alice"),
        ask(api, "alice", budget_tokens=300),
        ask(api, "erin"),
        ask(api, "dave"),  # injected
        ask(api, "nobody"),
        ask(api, "nobody-else"),  # scope_unknown
        ask(api, "fred"),  # scope_empty
        ask(api, "alice", budget_tokens=1),  # budget_too_small
        ask(api, "carol", "Where does Carol live?"),  # all_blocked
    ]
    settings.HAKI_RECALL_MAX_DISTANCE = 0.05
    packets += [
        ask(api, "alice", "What is the capital of Australia?"),  # no_relevant_memory
        ask(api, "alice", "How far is the Moon?"),
    ]
    counts = {}
    for packet in packets:
        key = packet["empty_reason"] or "injected"
        assert (key == "injected") == (packet["rendered"] != "")
        counts[key] = counts.get(key, 0) + 1
    assert counts == {
        "injected": 4,
        "scope_unknown": 2,
        "scope_empty": 1,
        "budget_too_small": 1,
        "all_blocked": 1,
        "no_relevant_memory": 2,
    }
    return counts


def overview(api):
    response = api.get("/v1/stats/overview", {"project_id": PROJECT})
    assert response.status_code == 200, response.content
    return response.json()


def assert_adds_up(body, counts):
    calls = sum(counts.values())
    assert body["context_calls"] == calls
    assert body["calls_injected"] == counts["injected"]
    assert body["injection_rate"] == round(counts["injected"] / calls, 4)
    assert body["empty_reasons"] == {
        **{reason: counts.get(reason, 0) for reason in EmptyReason.values},
        selectors.NOT_RECORDED: 0,
    }
    assert body["calls_injected"] + sum(body["empty_reasons"].values()) == body["context_calls"]


def test_the_injection_rate_and_the_empty_reasons_add_up_to_the_calls(api, mixed_calls):
    # given calls of every kind made through the API, when the overview is read from the traces
    # then every call is counted once: injected, or under the reason its packet gave
    assert_adds_up(overview(api), mixed_calls)


def test_they_add_up_through_the_rollup_too(api, mixed_calls):
    # given the calls rolled up (the job runs once their slice has closed)
    assert stats_rollup(now=timezone.now() + timedelta(hours=1))["traces"] == sum(mixed_calls.values())
    # then the overview, now read from the rollup, counts them the same
    assert_adds_up(overview(api), mixed_calls)


def test_an_empty_call_traced_before_reasons_were_recorded_is_counted_apart(api):
    # given an empty call traced without a reason (before traces migration 0014) and one that served something
    fact = FactFactory(text="Alice likes jazz.")
    record_call(at=timezone.now() - timedelta(hours=2), facts=[(fact, "over_budget")])
    record_call(at=timezone.now() - timedelta(hours=1), facts=[(fact, "included")])
    body = overview(api)
    # then it is not_recorded, and the numbers still add up
    assert body["context_calls"] == 2 and body["calls_injected"] == 1 and body["empty_reasons"]["not_recorded"] == 1
    assert body["calls_injected"] + sum(body["empty_reasons"].values()) == 2


def page(client, user):
    client.force_login(user)
    today = timezone.now().date()
    response = client.get(
        "/stats/", {"project": PROJECT, "since": (today - timedelta(days=1)).isoformat(), "until": today.isoformat()}
    )
    assert response.status_code == 200
    return response.content.decode()


def reason_rows(html: str) -> dict[str, tuple[str, str]]:
    table = html[html.index('id="empty-reasons"') :]
    table = table[: table.index("</table>")]
    return {
        code: (count, share)
        for code, count, share in re.findall(
            r'<code>(\w+)</code>.*?<td class="num">(\d+)</td><td class="num">([^<]*)</td>', table, re.S
        )
    }


def test_the_page_shows_every_reason_and_how_many_calls_came_back_empty(client, api, product_owner, mixed_calls):
    html = page(client, product_owner)
    # every empty reason, with its calls and share of all the calls; no not_recorded row when there is none
    rows = reason_rows(html)
    assert set(rows) == set(EmptyReason.values)
    assert rows["scope_unknown"] == ("2", "18.2 %") and rows["budget_too_small"] == ("1", "9.1 %")
    assert "unknown subject: nothing was ever written for it" in html  # what each reason means
    # and the empty calls plus the injected ones are the calls
    assert re.search(
        r'id="empty-count">7</span> of the period.s\s+11 context calls served nothing; the other 4', html
    ), html[html.index('id="calls-empty"') :][:300]
    assert re.search(r'id="injection-rate">36.4 %<', html)  # 4 of 11


def test_the_page_shows_the_calls_traced_without_a_reason(client, product_owner, api):
    record_call(at=timezone.now() - timedelta(hours=1))  # empty, no reason recorded
    rows = reason_rows(page(client, product_owner))
    assert rows[selectors.NOT_RECORDED] == ("1", "100.0 %")
