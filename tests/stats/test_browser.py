"""The curators' and product owners' pages driven in headless Chromium against a live server: real logins,
real buttons. Screenshots of every page land in test-output/screenshots/."""

import re
from datetime import timedelta
from urllib.parse import parse_qs

import pytest
from django.utils import timezone

from facts.models import ConflictSet, Fact
from tests import browser as browser_support
from tests.conftest import PROJECT
from tests.facts.factories import FactFactory
from tests.traces.factories import record_call


def browser_test(test):
    """Drives headless Chromium against the live server, whose thread must see the rows the test commits."""
    return pytest.mark.browser(pytest.mark.django_db(transaction=True)(test))


NANTES = "Paul lives in Nantes with his wife and their two children."
BORDEAUX = "Paul lives in Bordeaux with his wife and their two children."


def context_call(api, query):
    response = api.post("/v1/context", {"project_id": PROJECT, "subject_id": "paul", "query": query}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


@browser_test
def test_a_curator_resolves_a_conflict_and_the_next_context_call_serves_the_kept_fact(browser, api, curator):
    # given two contradicting facts, so both are blocked
    for text in (NANTES, BORDEAUX):
        assert (
            api.post(
                "/v1/facts", {"project_id": PROJECT, "subject_id": "paul", "text": text}, format="json"
            ).status_code
            == 201
        )
    assert context_call(api, "Where does Paul live?")["facts"] == []

    # when a curator keeps the Bordeaux fact through the admin
    browser.visit("/admin/facts/conflictset/", "curator-1-login")
    browser.log_in("cora", "pw-cora", "curator-2-conflict-sets")
    browser.click("#result_list tbody tr:first-child th a", "curator-3-conflict-set")
    # the newer fact first: Bordeaux, written second, is fact 1
    assert browser.find("#keep-1").get_attribute("value") == str(Fact.objects.get(text=BORDEAUX).id)
    browser.find("#keep-1").click()
    browser.click("button[value=keep]", "curator-4-confirm")
    assert "superseded by fact 1" in browser.find("#content-main").text
    browser.find("#id_note").send_keys("Paul moved to Bordeaux in May.")
    browser.click("#content-main form [type=submit]", "curator-5-resolved")

    # then the set is resolved by that curator, and the next context call serves the kept fact
    assert "by user:cora" in browser.find("#resolution").text
    conflict_set = ConflictSet.objects.get()
    assert (conflict_set.status, conflict_set.note) == ("resolved", "Paul moved to Bordeaux in May.")
    packet = context_call(api, "Where does Paul live?")
    assert [f["text"] for f in packet["facts"]] == [BORDEAUX]

    # and the curator can still see why the first call served nothing: the trace that blocked them
    browser.click("a[href*='decision=blocked']", "curator-6-traces-that-blocked-fact-1")
    browser.click("#result_list tbody tr:first-child th a", "curator-7-trace")
    assert [row.text for row in browser.driver.find_elements("css selector", "#decisions .badge")] == ["blocked"] * 2
    browser.click("#decisions tbody tr:first-child a", "curator-8-fact")
    assert "blocked 1 time" in browser.find("#fact-decisions").text


@browser_test
def test_a_product_owner_reads_the_injection_rate_the_api_reports(browser, api, product_owner):
    # given three context calls in the last days, two of which served a fact
    fact = FactFactory(text="Alice is allergic to peanuts.")
    now = timezone.now()
    record_call(at=now - timedelta(days=2), latency_ms=18, used_tokens=40, facts=[(fact, "included")])
    record_call(
        at=now - timedelta(days=1),
        latency_ms=25,
        used_tokens=0,
        facts=[(fact, "below_relevance_floor")],
        empty_reason="no_relevant_memory",
    )
    record_call(at=now - timedelta(hours=1), latency_ms=31, used_tokens=40, facts=[(fact, "included")])

    # when a product owner opens /stats/
    browser.visit("/stats/", "owner-1-login")
    browser.log_in("pia", "pw-pia", "owner-2-stats")

    # then the page shows the numbers GET /v1/stats/overview reports for the same period
    query = re.search(r"GET /v1/stats/overview\?(\S+)", browser.find("main").text).group(1)
    params = {name: values[0] for name, values in parse_qs(query).items()}
    body = api.get("/v1/stats/overview", params).json()
    assert body["context_calls"] == 3 and body["injection_rate"] == 0.6667
    assert browser.find("#injection-rate").text == f"{body['injection_rate'] * 100:.1f} %" == "66.7 %"
    assert browser.find("#context-calls").text == str(body["context_calls"])

    # and the admin holds nothing for them but the way back to /stats/
    browser.click("header.top nav a[href='/admin/']", "owner-3-admin-index")
    assert "permission" in browser.find("#content-main").text
    browser.click("#user-tools a[href='/stats/']", "owner-4-back-to-stats")

    # and a period without calls says how to send one
    browser.visit(f"/stats/?project={PROJECT}&since=2025-01-01&until=2025-01-31", "owner-5-no-calls-in-period")
    assert "curl" in browser.find("#no-calls").text


def test_without_chromium_the_browser_tests_skip_but_fail_in_ci(monkeypatch):
    monkeypatch.setattr(browser_support, "CHROMIUM", "/nonexistent/chromium")
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="/nonexistent/chromium"):
        browser_support.require_chromium()
    monkeypatch.setenv("CI", "1")
    with pytest.raises(pytest.fail.Exception, match="apt-get install chromium chromium-driver"):
        browser_support.require_chromium()
