"""/stats/: the product owners' pages show what GET /v1/stats/overview computes, server-rendered, read-only."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from stats import selectors
from tests.conftest import OTHER_PROJECT, PROJECT, make_user
from tests.stats.conftest import SINCE, UNTIL
from tests.traces.factories import record_call

pytestmark = pytest.mark.django_db

WEEK = {"project": PROJECT, "since": "2026-03-01", "until": "2026-03-07"}  # [SINCE, UNTIL) as whole days


def page(client, user, expect=200, **params):
    client.force_login(user)
    response = client.get("/stats/", params)
    assert response.status_code == expect
    return response.content.decode()


def text_of(html: str, element_id: str) -> str:
    match = re.search(rf'id="{element_id}"[^>]*>([^<]*)<', html)
    assert match, element_id
    return match.group(1).strip()


def test_the_page_shows_the_numbers_the_api_reports(client, api, product_owner, week):
    api_body = api.get("/v1/stats/overview", {"project_id": PROJECT, "since": SINCE, "until": UNTIL}).json()
    html = page(client, product_owner, **WEEK)
    assert text_of(html, "injection-rate") == f"{api_body['injection_rate'] * 100:.1f} %" == "75.0 %"
    assert text_of(html, "context-calls") == str(api_body["context_calls"]) == "4"
    assert f"/v1/stats/overview?project_id={PROJECT}&amp;since={SINCE}&amp;until={UNTIL}" in html


def test_the_page_holds_the_charts_tables_and_lists(client, product_owner, week):
    html = page(client, product_owner, **WEEK)
    assert html.count('<svg class="chart"') == 3
    assert "<script" not in html and 'src="http' not in html and "<link" not in html  # nothing fetched elsewhere
    assert "no_relevant_memory" in html and "25.0 %" in html  # one call in four came back empty
    assert '<span class="badge blocked">blocked</span></td><td><code>conflict_open</code>' in html
    assert "Bob lives in Paris." in html and "Alice once lived in Oslo." in html  # never served
    assert "Alice is allergic to peanuts." not in html  # served
    assert re.search(r"<td>bob</td><td class=\"num\">2</td>\s*<td class=\"num\">100.0 %</td>", html)  # top subjects
    assert "Mon 2 Mar 2026" in html  # the numbers per day, without JavaScript


def test_days_without_calls_are_gaps_not_zeros(client, product_owner, week):
    days = selectors.calls_per_day(
        project_id=PROJECT, period=selectors.days_period(*(timezone.datetime(2026, 3, d).date() for d in (1, 7)))
    )
    assert [d.context_calls for d in days] == [1, 2, 1, 0, 0, 0, 0]
    assert [d.injection_rate for d in days] == [1.0, 0.5, 1.0, None, None, None, None]
    assert days[1].latency_p50_ms == 25.0


def test_the_period_and_the_project_are_a_plain_get_form(client, product_owner, other_api, week):
    html = page(client, product_owner, **WEEK)
    assert 'name="since" value="2026-03-01"' in html and 'name="until" value="2026-03-07"' in html
    assert f'<option value="{OTHER_PROJECT}">' in html and f'<option value="{PROJECT}" selected>' in html
    other = page(client, product_owner, project=OTHER_PROJECT, since="2026-03-01", until="2026-03-07")
    assert text_of(other, "context-calls") == "1"


def test_by_default_the_last_30_days_of_the_first_project(client, api, product_owner):
    record_call(at=timezone.now() - timedelta(days=29), facts=[])
    record_call(at=timezone.now() - timedelta(days=31), facts=[])
    html = page(client, product_owner)
    today = timezone.now().date()
    assert f'name="until" value="{today.isoformat()}"' in html
    assert f'name="since" value="{(today - timedelta(days=29)).isoformat()}"' in html
    assert text_of(html, "context-calls") == "1"


def test_a_wrong_period_says_so_and_shows_the_default(client, api, product_owner):
    html = page(client, product_owner, project=PROJECT, since="2026-03-07", until="2026-03-01")
    assert "The first day must not be after the last." in html
    assert 'id="context-calls"' in html


def test_no_call_yet_says_how_to_send_one(client, api, product_owner):
    html = page(client, product_owner)
    assert "No context calls in this period" in html
    assert 'curl -H "Authorization: Bearer $KEY"' in html
    assert f'"project_id":"{PROJECT}"' in html and "http://testserver/v1/context" in html
    assert text_of(html, "injection-rate") == "–"


def test_no_project_yet_says_how_to_create_one(client, product_owner):
    html = page(client, product_owner)
    assert "No project yet" in html and "create_api_key --project" in html


def test_links_into_the_admin_only_for_those_who_may_follow_them(client, api, curator, product_owner, week):
    curator_html = page(client, curator, **WEEK)
    assert f"/admin/traces/trace/?project_id={PROJECT}&amp;since=2026-03-01&amp;until=2026-03-07" in curator_html
    assert f"/admin/facts/conflictset/?project_id={PROJECT}&amp;status__exact=open" in curator_html
    owner_html = page(client, product_owner, **WEEK)
    assert "/admin/traces/" not in owner_html and "/admin/facts/" not in owner_html


# --- who sees the pages -------------------------------------------------------------------------------


def test_anonymous_visitors_are_sent_to_the_admin_login(client):
    response = client.get("/stats/?project=x")
    assert response.status_code == 302
    assert response["Location"] == "/admin/login/?next=/stats/%3Fproject%3Dx"


def test_a_logged_in_user_without_the_role_gets_403(client, plain_user, week):
    html = page(client, plain_user, expect=403, **WEEK)
    assert 'id="context-calls"' not in html


def test_the_product_owners_group_is_enough_without_staff(client, roles, week):
    html = page(client, make_user("olga", staff=False, groups=["product-owners"]), **WEEK)
    assert text_of(html, "context-calls") == "4"


def test_staff_may_read_the_pages(client, curator, week):
    html = page(client, curator, **WEEK)
    assert text_of(html, "context-calls") == "4"
