"""The trace browser in the admin: read-only lists and filters, and a trace's request, packet, timings and
decisions by rank."""

import re
from datetime import UTC, datetime

import pytest
from django.contrib.auth.models import User

from tests.conftest import OTHER_PROJECT, PROJECT
from tests.facts.factories import EventFactory, FactFactory
from tests.traces.factories import record_call
from traces.models import Trace

pytestmark = pytest.mark.django_db

URL = "/admin/traces/trace/"


def march(day, hour=12):
    return datetime(2026, 3, day, hour, tzinfo=UTC)


@pytest.fixture
def calls():
    peanuts = FactFactory(text="Alice is allergic to peanuts.")
    cats = FactFactory(text="Alice has two cats.")
    bakery = EventFactory(text="Alice had a reaction at the bakery.")
    return {
        "served": record_call(
            at=march(1),
            query="What should Alice avoid eating?",
            used_tokens=30,
            latency_ms=42.5,
            facts=[(peanuts, "included"), (cats, "over_budget")],
            episodes=[(bakery, "included")],
            rendered="<haki_memory>\nFacts:\n- Alice is allergic to peanuts.\n</haki_memory>",
        ),
        "empty": record_call(
            at=march(3),
            query="Capital of Australia?",
            empty_reason="no_relevant_memory",
            facts=[(peanuts, "below_relevance_floor")],
        ),
        "blocked": record_call(
            at=march(5),
            subject_id="bob",
            query="Where does Bob live?",
            warnings=["open_conflict: 1 fact(s) hidden pending conflict resolution"],
            facts=[(cats, "conflict_open")],
        ),
        "elsewhere": record_call(at=march(2), project_id=OTHER_PROJECT, subject_id="carol", query="Carol's boat?"),
        "peanuts": peanuts,
        "cats": cats,
        "bakery": bakery,
    }


def listed(client, **params) -> str:
    response = client.get(URL, params)
    assert response.status_code == 200
    return response.content.decode()


def shown_ids(html: str) -> set[str]:
    return set(re.findall(r"/admin/traces/trace/([0-9a-f-]{36})/change/", html))


@pytest.fixture
def browser(client, curator):
    client.force_login(curator)
    return client


def test_filters_narrow_the_list(browser, calls):
    ids = {name: str(value) for name, value in calls.items() if name in ("served", "empty", "blocked", "elsewhere")}
    assert shown_ids(listed(browser)) == set(ids.values())
    assert shown_ids(listed(browser, project_id=PROJECT)) == {ids["served"], ids["empty"], ids["blocked"]}
    assert shown_ids(listed(browser, subject_id="bob")) == {ids["blocked"]}
    assert shown_ids(listed(browser, status__exact="degraded")) == {ids["blocked"]}
    assert shown_ids(listed(browser, empty_reason__exact="no_relevant_memory")) == {ids["empty"]}
    assert shown_ids(listed(browser, since="2026-03-02", until="2026-03-03")) == {ids["elsewhere"], ids["empty"]}
    assert shown_ids(listed(browser, q="australia")) == {ids["empty"]}


def test_the_decisions_about_one_fact(browser, calls):
    peanuts = calls["peanuts"].pk
    html = listed(browser, fact=peanuts)
    assert shown_ids(html) == {str(calls["served"]), str(calls["empty"])}
    assert "Alice is allergic to peanuts." in html and "All traces" in html
    assert shown_ids(listed(browser, fact=peanuts, decision="excluded")) == {str(calls["empty"])}
    assert shown_ids(listed(browser, fact=peanuts, reason_code="included")) == {str(calls["served"])}


@pytest.mark.parametrize(
    "params", [{"fact": "not-a-uuid"}, {"since": "March"}, {"fact": "0" * 32, "decision": "maybe"}]
)
def test_bad_filter_values_are_an_error_not_a_crash(browser, params):
    response = browser.get(URL, params)
    assert response.status_code == 302 and response["Location"].endswith("?e=1")


def test_a_trace_shows_request_packet_timings_and_decisions_by_rank(browser, calls):
    html = browser.get(f"{URL}{calls['served']}/change/").content.decode()
    assert "What should Alice avoid eating?" in html and "900 tokens" in html
    # two facts and an episode were candidates: all three are counted, and none is called a fact that is not
    assert re.search(r"1 fact and 1 episode\s+of 3 candidates;", html)
    assert "&lt;haki_memory&gt;\nFacts:\n- Alice is allergic to peanuts.\n&lt;/haki_memory&gt;" in html
    assert '<td>retrieve</td><td class="num">40.00</td>' in html and "42.50" in html
    rows = re.findall(
        r'<tr class="(included|excluded|blocked)">.*?<td class="num">(\d+)</td>\s*<td>(fact|episode)</td>'
        r'.*?<code>(\w+)</code>.*?href="(/admin/facts/\w+/[0-9a-f-]+/change/)"',
        html,
        re.S,
    )
    assert rows == [
        ("included", "1", "fact", "included", f"/admin/facts/fact/{calls['peanuts'].pk}/change/"),
        ("excluded", "2", "fact", "over_budget", f"/admin/facts/fact/{calls['cats'].pk}/change/"),
        ("included", "1", "episode", "included", f"/admin/facts/event/{calls['bakery'].pk}/change/"),
    ]
    assert '<span class="badge excluded">excluded</span>' in html  # the colour always comes with its word


def test_a_blocked_call_shows_its_warning(browser, calls):
    html = browser.get(f"{URL}{calls['blocked']}/change/").content.decode()
    assert "open_conflict: 1 fact(s) hidden pending conflict resolution" in html
    assert '<span class="badge blocked">blocked</span>' in html and "Nothing: the packet was empty." in html


def test_traces_are_read_only_even_for_a_superuser(client, calls):
    client.force_login(User.objects.create_superuser("root", password="x"))
    trace_url = f"{URL}{calls['served']}/change/"
    assert client.get(trace_url).status_code == 200
    assert client.post(trace_url, {"query": "rewritten"}).status_code == 403
    assert client.get(f"{URL}add/").status_code == 403
    assert client.get(f"{URL}{calls['served']}/delete/").status_code == 403
    assert Trace.objects.get(id=calls["served"]).query == "What should Alice avoid eating?"


def _tiered_trace(rows):
    """A tiered call's trace holding `rows` (DecisionRow), written by the trace writer."""
    from django.utils import timezone

    from traces.services import trace_record

    return trace_record(
        trace={
            "project_id": PROJECT,
            "subject_id": "alice",
            "query": "how?",
            "budget_tokens": 900,
            "used_tokens": 9,
            "status": "ok",
            "empty_reason": None,
            "warnings": [],
            "rendered": "",
            "facts_served": 1,
            "episodes_served": 0,
            "candidates": len(rows),
            "embedder": "hashing",
            "timings": {},
            "latency_ms": 1.0,
            "created_at": timezone.now(),
        },
        decisions=rows,
    )


def test_a_tiered_trace_shows_identity_and_procedure_decisions_with_their_tiers(browser):
    from tests.facts.factories import IdentityBlockFactory, ProcedureFactory
    from traces.services import DecisionRow

    block, procedure, fact = IdentityBlockFactory(text="Be brief."), ProcedureFactory(title="Deploying"), FactFactory()
    rows = [
        DecisionRow(
            item_type=kind,
            item_id=item.id,
            reason_code="included",
            rank=1,
            score=None,
            similarity=None,
            cosine_distance=None,
            text_rank=None,
            recency=None,
            tokens=3,
            tier=tier,
        )
        for kind, item, tier in [
            ("procedure", procedure, "procedures"),
            ("fact", fact, "facts"),
            ("identity", block, "identity"),
        ]
    ]
    trace_id = _tiered_trace(rows)
    html = browser.get(f"{URL}{trace_id}/change/").content.decode()
    shown = re.findall(
        r'<td class="num">1</td>\s*<td>([\w ]+)</td>\s*<td>(\w*)</td>.*?href="(/admin/facts/\w+/[0-9a-f-]+/change/)"',
        html,
        re.S,
    )
    assert shown == [
        ("identity block", "identity", f"/admin/facts/identityblock/{block.pk}/change/"),
        ("fact", "facts", f"/admin/facts/fact/{fact.pk}/change/"),
        ("procedure", "procedures", f"/admin/facts/procedure/{procedure.pk}/change/"),
    ]
    assert "Deploying: " in html and "Be brief." in html


def test_a_fact_superseded_in_context_links_to_the_newer_fact(browser):
    # given a tiered call that served the newer of two contradicting facts and excluded the older for the call
    from traces.services import DecisionRow

    older, newer = FactFactory(text="Alice lives in Paris."), FactFactory(text="Alice no longer lives in Paris.")
    rows = [
        DecisionRow(
            item_type="fact",
            item_id=newer.id,
            reason_code="included",
            rank=1,
            score=0.9,
            similarity=0.9,
            cosine_distance=0.1,
            text_rank=0.5,
            recency=1.0,
            tokens=7,
            tier="facts",
        ),
        DecisionRow(
            item_type="fact",
            item_id=older.id,
            reason_code="superseded_in_context",
            rank=2,
            score=0.8,
            similarity=0.8,
            cosine_distance=0.2,
            text_rank=0.5,
            recency=0.9,
            tokens=5,
            tier="facts",
            by_item=newer.id,
        ),
    ]
    trace_id = _tiered_trace(rows)
    # when a curator opens the trace
    html = browser.get(f"{URL}{trace_id}/change/").content.decode()
    # then the older fact's row says why, and links to the fact that won
    row = re.search(r"<tr class=\"excluded\">.*?</tr>", html, re.S).group(0)
    assert "superseded_in_context" in row and "Alice lives in Paris." in row
    assert f'href="/admin/facts/fact/{newer.pk}/change/">newer fact</a>' in row
