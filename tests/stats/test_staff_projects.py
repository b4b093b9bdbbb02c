"""Staff users limited to projects (StaffProjectAccess): the admin's lists and pages and /stats/ show only
their projects; superusers and staff without a limit see every project."""

import pytest
from django.contrib.auth.models import User
from django.urls import reverse
from django.utils import timezone

from hakimem.models import StaffProjectAccess
from tests.conftest import OTHER_PROJECT, PROJECT, make_client, make_user
from tests.facts.factories import ConflictSetFactory, EventFactory, FactFactory
from tests.traces.factories import record_call

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_projects(db):
    """A fact, an event, a conflict set and a trace in each project, each text naming its project; both
    projects have keys (the stats page lists projects with keys)."""
    rows = {}
    for project in (PROJECT, OTHER_PROJECT):
        make_client(project)
        fact = FactFactory(project_id=project, text=f"Fact of {project}.")
        EventFactory(project_id=project, text=f"Event of {project}.")
        ConflictSetFactory(project_id=project)
        record_call(at=timezone.now(), project_id=project, query=f"question of {project}", facts=[(fact, "included")])
        rows[project] = fact
    return rows


@pytest.fixture
def limited_curator(roles):
    """A curator given only OTHER_PROJECT."""
    user = make_user("lena", staff=True, groups=["curators"])
    StaffProjectAccess.objects.create(user=user, project_id=OTHER_PROJECT)
    return user


def _page(client, user, url, **params) -> str:
    client.force_login(user)
    response = client.get(url, params)
    assert response.status_code == 200, response.status_code
    return response.content.decode()


@pytest.mark.parametrize("model, text", [("fact", "Fact of"), ("event", "Event of"), ("trace", "question of")])
def test_a_limited_curator_lists_only_its_projects_rows(client, two_projects, limited_curator, model, text):
    # when the curator limited to the other project opens a list
    app = "traces" if model == "trace" else "facts"
    html = _page(client, limited_curator, reverse(f"admin:{app}_{model}_changelist"))
    # then only that project's rows are listed
    assert f"{text} {OTHER_PROJECT}" in html
    assert f"{text} {PROJECT}" not in html


def test_a_limited_curator_sees_only_its_projects_conflict_sets(client, two_projects, limited_curator):
    html = _page(client, limited_curator, reverse("admin:facts_conflictset_changelist"))
    assert "1 conflict set" in html
    assert f'<td class="field-project_id">{OTHER_PROJECT}</td>' in html
    assert f'<td class="field-project_id">{PROJECT}</td>' not in html


def test_a_limited_curator_cannot_open_or_retract_another_projects_fact(client, two_projects, limited_curator):
    # given a fact of a project the curator is not given
    theirs = two_projects[PROJECT]
    client.force_login(limited_curator)
    # when the curator opens its page, or posts its retraction
    page = client.get(reverse("admin:facts_fact_change", args=[theirs.pk]))
    retract = client.post(reverse("admin:facts_fact_retract", args=[theirs.pk]), {"note": "x", "confirm": "on"})
    # then the admin acts as if it did not exist, and the fact stays active
    assert page.status_code == 302 and retract.status_code == 302
    theirs.refresh_from_db()
    assert theirs.status == "active"
    # while a fact of its own project opens
    assert client.get(reverse("admin:facts_fact_change", args=[two_projects[OTHER_PROJECT].pk])).status_code == 200


def test_the_project_filter_offers_only_its_projects(client, two_projects, limited_curator):
    html = _page(client, limited_curator, reverse("admin:facts_fact_changelist"))
    assert f"?project_id={OTHER_PROJECT}" in html and f"?project_id={PROJECT}" not in html


def test_stats_pages_offer_and_show_only_its_projects(client, two_projects, limited_curator):
    # when the limited curator opens /stats/, even asking for the other project by name
    html = _page(client, limited_curator, "/stats/", project=PROJECT)
    # then only its project is offered, and its numbers are shown instead
    assert f'<option value="{OTHER_PROJECT}"' in html
    assert f'<option value="{PROJECT}"' not in html
    assert f"/v1/stats/overview?project_id={OTHER_PROJECT}&amp;" in html
    assert f"project_id={PROJECT}&amp;" not in html


def test_superusers_and_unlimited_staff_see_every_project(client, two_projects, roles):
    admin = User.objects.create_superuser("root", password="pw-root")
    StaffProjectAccess.objects.create(user=admin, project_id=OTHER_PROJECT)  # no effect on a superuser
    for user in (admin, make_user("cora", staff=True, groups=["curators"])):
        html = _page(client, user, reverse("admin:facts_fact_changelist"))
        assert f"Fact of {PROJECT}" in html and f"Fact of {OTHER_PROJECT}" in html
