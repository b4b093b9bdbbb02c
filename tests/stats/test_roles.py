"""The two roles, `curators` and `product-owners`: what ensure_roles gives them, and what each kind of user
sees of the admin and of /stats/."""

import io

import pytest
from django.contrib.auth.models import Group, Permission
from django.core.management import call_command
from django.utils import timezone

from stats.services import ROLES
from tests.facts.factories import FactFactory
from tests.traces.factories import record_call

pytestmark = pytest.mark.django_db


def permissions_of(name: str) -> set[str]:
    group = Group.objects.get(name=name)
    return {f"{p.content_type.app_label}.{p.codename}" for p in group.permissions.all()}


def test_ensure_roles_creates_both_groups_with_their_permissions():
    out = io.StringIO()
    call_command("ensure_roles", stdout=out)
    assert permissions_of("curators") == {
        "facts.view_conflictset",
        "facts.change_conflictset",
        "facts.view_fact",
        "facts.change_fact",
        "facts.view_event",
        "traces.view_trace",
        "facts.view_identityblock",
        "facts.add_identityblock",
        "facts.change_identityblock",
        "facts.delete_identityblock",
        "facts.view_procedure",
        "facts.add_procedure",
        "facts.change_procedure",
    }
    assert permissions_of("product-owners") == set()
    assert "curators: facts.view_conflictset" in out.getvalue()


def test_ensure_roles_is_safe_to_run_again_and_keeps_what_an_administrator_added():
    call_command("ensure_roles", verbosity=0)
    extra = Permission.objects.get(codename="view_apikey")
    Group.objects.get(name="curators").permissions.add(extra)
    out = io.StringIO()
    call_command("ensure_roles", stdout=out)
    assert "curators: nothing missing" in out.getvalue()
    assert permissions_of("curators") == set(ROLES["curators"]) | {"hakimem.view_apikey"}
    assert Group.objects.filter(name__in=ROLES).count() == 2


def test_bootstrap_dev_sets_the_roles_up(settings, tmp_path):
    settings.VAR_DIR = tmp_path  # bootstrap_dev writes the development key and password there
    call_command("bootstrap_dev", stdout=io.StringIO())
    assert permissions_of("curators") == set(ROLES["curators"])


# --- who sees what ------------------------------------------------------------------------------------


@pytest.fixture
def a_trace(db):
    fact = FactFactory(text="Alice is allergic to peanuts.")
    return record_call(at=timezone.now(), facts=[(fact, "included")]), fact


CURATOR_PAGES = ["/admin/facts/conflictset/", "/admin/facts/fact/", "/admin/facts/event/", "/admin/traces/trace/"]


def status_of(client, user, url) -> int:
    client.force_login(user)
    return client.get(url).status_code


@pytest.mark.parametrize("url", CURATOR_PAGES)
def test_a_curator_sees_the_curation_pages(client, curator, url):
    assert status_of(client, curator, url) == 200


def test_a_curator_reads_traces_and_facts_but_nothing_else(client, curator, a_trace):
    trace_id, fact = a_trace
    assert status_of(client, curator, f"/admin/traces/trace/{trace_id}/change/") == 200
    assert status_of(client, curator, f"/admin/facts/fact/{fact.pk}/change/") == 200
    assert status_of(client, curator, "/admin/hakimem/apikey/") == 403
    assert status_of(client, curator, "/admin/auth/user/") == 403
    assert status_of(client, curator, "/stats/") == 200
    index = client.get("/admin/").content.decode()
    assert 'href="/stats/"' in index and "/admin/traces/trace/" in index and "/admin/hakimem/apikey/" not in index


@pytest.mark.parametrize("url", CURATOR_PAGES)
def test_a_product_owner_sees_no_admin_page(client, product_owner, url):
    assert status_of(client, product_owner, url) == 403


def test_a_product_owner_sees_the_stats_and_an_empty_admin_index(client, product_owner, a_trace):
    trace_id, _ = a_trace
    assert status_of(client, product_owner, "/stats/") == 200
    assert status_of(client, product_owner, f"/admin/traces/trace/{trace_id}/change/") == 403
    index = client.get("/admin/").content.decode()
    assert 'href="/stats/"' in index and "/admin/traces/" not in index and "/admin/facts/" not in index


@pytest.mark.parametrize("url", ["/admin/", *CURATOR_PAGES])
def test_a_user_who_is_not_staff_is_sent_to_the_admin_login(client, plain_user, url):
    client.force_login(plain_user)
    response = client.get(url)
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")


def test_a_user_who_is_not_staff_gets_403_on_stats(client, plain_user):
    assert status_of(client, plain_user, "/stats/") == 403
