"""The admin and the /stats/ pages, with Django's test client: what the API refuses, their forms refuse with the
API's own serializers (a form error, nothing written), and no filter or period a URL can carry answers 500.

The cases were found by an outside probe (issue 35, item 6)."""

import json
from datetime import date
from urllib.parse import urlencode

import pytest
from django.contrib.auth.models import User
from django.urls import reverse
from django.utils import timezone

from facts.models import IdentityBlock, Procedure, Project
from tests.conftest import PROJECT
from tests.traces.factories import record_call

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client):
    client.force_login(User.objects.create_superuser("ada", password="pw-ada"))
    return client


# --- periods at the edges of the calendar -------------------------------------------------------------------------

EDGE_DAYS = ["0001-01-01", "0001-01-02", "0001-01-31", "2024-05-01", "9999-12-30", "9999-12-31"]


def test_stats_page_periods_at_the_edges_of_the_calendar_answer_the_form_not_a_500(admin_client, api):
    # given a project with a context call (the page shows the projects that hold keys)
    record_call(at=timezone.now(), project_id=PROJECT)
    # when the page is asked for every pair of edge days
    for since in EDGE_DAYS:
        for until in EDGE_DAYS:
            response = admin_client.get("/stats/", {"project": PROJECT, "since": since, "until": until})
            # then the page answers, saying what is wrong when the period cannot be shown
            assert response.status_code == 200, (since, until, response.status_code)
            first, last = date.fromisoformat(since), date.fromisoformat(until)
            otherwise_shown = first <= last and (last - first).days < 366
            if otherwise_shown and (since == "0001-01-01" or until == "9999-12-31"):
                assert "Show days from 0001-01-02 to 9999-12-30." in response.content.decode(), (since, until)


def test_the_trace_admins_days_at_the_edges_of_the_calendar_answer_not_a_500(admin_client):
    record_call(at=timezone.now(), project_id=PROJECT)
    url = reverse("admin:traces_trace_changelist")
    for since in ["", *EDGE_DAYS]:
        for until in ["", *EDGE_DAYS]:
            response = admin_client.get(url, {k: v for k, v in (("since", since), ("until", until)) if v})
            assert response.status_code in (200, 302), (since, until, response.status_code)


# --- U+0000 in filters, searches and paths ------------------------------------------------------------------------

NUL_QUERIES = [
    ("admin:facts_fact_changelist", {"project_id": "a\x00"}),
    ("admin:facts_fact_changelist", {"subject_id": "\x00"}),
    ("admin:facts_fact_changelist", {"q": "cel\x00lo"}),
    ("admin:facts_fact_changelist", {"category": "x\x00"}),
    ("admin:facts_event_changelist", {"extraction_status__exact": "\x00"}),
    ("admin:facts_conflictset_changelist", {"status__exact": "open\x00"}),
    ("admin:facts_consent_changelist", {"category": "\x00"}),
    ("admin:facts_procedure_changelist", {"category__exact": "\x00"}),
    ("admin:traces_trace_changelist", {"since": "2024\x00-01-01"}),
    ("admin:traces_trace_changelist", {"reason_code": "\x00", "fact": "\x00"}),
    ("admin:hakimem_apikey_changelist", {"q": "\x00"}),
]


@pytest.mark.parametrize("url_name, params", NUL_QUERIES, ids=[f"{n}-{'-'.join(p)}" for n, p in NUL_QUERIES])
def test_a_nul_in_an_admin_filter_or_search_is_a_4xx_not_a_500(admin_client, url_name, params):
    response = admin_client.get(f"{reverse(url_name)}?{urlencode(params)}")
    assert response.status_code in (200, 302, 400), response.status_code


def test_a_nul_in_an_admin_path_is_a_4xx_not_a_500(admin_client):
    for path in ("/admin/facts/fact/%00/change/", "/admin/facts/proj%00ect/", "/stats/%00"):
        response = admin_client.get(path)
        assert response.status_code in (400, 404), (path, response.status_code)


# --- the admin's forms validate as the API does -----------------------------------------------------------------

NUL, SURROGATE = "\\u0000", "\\ud800"


def _project_form(**changes) -> dict:
    return {
        "project_id": PROJECT,
        "consent_write_policy": "refuse",
        "categories": "[]",
        "conflict_policy": "",
        **changes,
    }


@pytest.mark.parametrize(
    "categories",
    ['["a", "a"]', f'["a{NUL}"]', f'["b{SURROGATE}"]', '["x", 3]', '{"a": 1}', '[""]', json.dumps(["c" * 65])],
)
def test_project_categories_the_api_refuses_are_a_form_error(admin_client, categories):
    # when the settings are added, and then changed, with categories PATCH /v1/project refuses
    added = admin_client.post(reverse("admin:facts_project_add"), _project_form(categories=categories))
    # then the form says so and nothing is written
    assert added.status_code == 200 and "errornote" in added.content.decode(), added.status_code
    assert not Project.objects.exists()
    Project.objects.create(project_id=PROJECT, categories=["kept"])
    changed = admin_client.post(
        reverse("admin:facts_project_change", args=[PROJECT]), _project_form(categories=categories)
    )
    assert changed.status_code == 200 and "errornote" in changed.content.decode()
    assert Project.objects.get(project_id=PROJECT).categories == ["kept"]


def nested(depth: int) -> dict:
    value: dict = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


BAD_METADATA = [
    json.dumps(nested(40)),
    f'{{"k": "v{NUL}"}}',
    f'{{"k{SURROGATE}": 1}}',
    "[1, 2]",
    json.dumps({"k": "x" * 17000}),
]


def _block_form(**changes) -> dict:
    return {
        "project_id": PROJECT,
        "subject_id": "",
        "name": "tone",
        "text": "Be brief.",
        "position": "0",
        "enabled": "on",
        "metadata": "{}",
        **changes,
    }


def _procedure_form(**changes) -> dict:
    return {
        "project_id": PROJECT,
        "subject_id": "",
        "title": "Deploy",
        "text": "Run the tests, then ship.",
        "category": "ops",
        "importance": "0.5",
        "metadata": "{}",
        **changes,
    }


@pytest.mark.parametrize("metadata", BAD_METADATA)
@pytest.mark.parametrize("model, form", [(IdentityBlock, _block_form), (Procedure, _procedure_form)])
def test_metadata_the_api_refuses_is_a_form_error_on_add_and_change(admin_client, model, form, metadata):
    name = model._meta.model_name
    added = admin_client.post(reverse(f"admin:facts_{name}_add"), form(metadata=metadata))
    assert added.status_code == 200 and "errornote" in added.content.decode(), added.status_code
    assert not model.objects.exists()
    # given a row written through the admin as it should be
    assert admin_client.post(reverse(f"admin:facts_{name}_add"), form()).status_code == 302
    row = model.objects.get()
    changed = admin_client.post(reverse(f"admin:facts_{name}_change", args=[row.pk]), form(metadata=metadata))
    assert changed.status_code == 200 and "errornote" in changed.content.decode()
    row.refresh_from_db()
    assert row.metadata == {}


def test_metadata_the_api_accepts_is_saved(admin_client):
    response = admin_client.post(reverse("admin:facts_identityblock_add"), _block_form(metadata=json.dumps(nested(32))))
    assert response.status_code == 302
    assert IdentityBlock.objects.get().metadata == nested(32)


@pytest.mark.parametrize("field, value", [("category", f"ops{NUL}"), ("title", "two\nlines")])
def test_a_procedures_text_fields_the_api_refuses_are_a_form_error(admin_client, field, value):
    response = admin_client.post(
        reverse("admin:facts_procedure_add"),
        _procedure_form(**{field: json.loads(f'"{value}"') if NUL in value else value}),
    )
    assert response.status_code == 200 and "errornote" in response.content.decode()
    assert not Procedure.objects.exists()
