"""Row-level security: a query that forgets its project filter inside a request still sees only what the
request may see (hakimem/rowsecurity.py)."""

import pytest
from django.db import connection
from django.test import Client

from facts.models import Fact
from hakimem.models import StaffProjectAccess
from hakimem.rowsecurity import API_ROLE, STAFF_ROLE
from tests.conftest import OTHER_PROJECT, PROJECT, error_code, make_client, make_user
from tests.facts.factories import ConflictSetFactory, EventFactory, FactFactory, IdentityBlockFactory, ProcedureFactory
from tests.traces.factories import record_call

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.hakimem.unscoped_urls")]


@pytest.fixture
def two_projects():
    """Facts, events, a conflict set of two members and a trace with one decision in each of two projects."""
    from django.utils import timezone

    for project in (PROJECT, OTHER_PROJECT):
        fact = FactFactory(project_id=project, text=f"A fact of {project}.")
        FactFactory(project_id=project, text=f"Another fact of {project}.")
        EventFactory(project_id=project)
        ConflictSetFactory(project_id=project)
        record_call(at=timezone.now(), project_id=project, facts=[(fact, "included")])
        IdentityBlockFactory(project_id=project, subject_id="")
        ProcedureFactory(project_id=project, subject_id="")


def _own(project: str, body: dict) -> dict:
    return {
        "facts": [project] * 4,  # two facts and the conflict set's two members
        "events": [project],
        "conflict_sets": [project],
        "conflict_members": [project] * 2,
        "conflict_member_rows": 2,
        "traces": [project],
        "decisions": 1,
        "identity_blocks": [project],
        "procedures": [project],
    }


def test_an_unscoped_query_in_an_api_request_sees_only_the_keys_project(two_projects, api, other_api):
    # given rows of two projects in every scoped table
    # when a view reads every table without any project filter, once with each project's key
    mine = api.get("/v1/test/unscoped")
    theirs = other_api.get("/v1/test/unscoped")
    # then each sees exactly its own project's rows, in every table, children included
    assert mine.status_code == 200, mine.content
    assert mine.json() == _own(PROJECT, mine.json())
    assert theirs.json() == _own(OTHER_PROJECT, theirs.json())


def test_an_unscoped_update_in_an_api_request_changes_only_the_keys_project(two_projects, api):
    # when a view updates every fact without a filter
    response = api.patch("/v1/test/unscoped")
    # then only the key's project's facts were touched
    assert response.json() == {"updated": 4}
    assert set(Fact.objects.filter(text="overwritten").values_list("project_id", flat=True)) == {PROJECT}
    assert Fact.objects.filter(project_id=OTHER_PROJECT).exclude(text="overwritten").count() == 4


def test_a_request_without_a_project_sees_nothing(two_projects, client):
    # when an API view that needs no key reads everything (the project is never set)
    body = client.get("/v1/test/unscoped-open").json()
    # then an unset project sees no row at all, rather than every row
    assert body == {
        "facts": [],
        "events": [],
        "conflict_sets": [],
        "conflict_members": [],
        "conflict_member_rows": 0,
        "traces": [],
        "decisions": 0,
        "identity_blocks": [],
        "procedures": [],
    }


def test_anonymous_pages_see_nothing_and_signed_in_staff_see_every_project(two_projects, roles):
    # given a visitor, then a staff user with no project limit
    anonymous = Client().get("/stats/test/unscoped").json()
    staff = Client()
    staff.force_login(make_user("stan", staff=True, groups=["curators"]))
    body = staff.get("/stats/test/unscoped").json()
    # then the visitor sees nothing, the staff user both projects
    assert anonymous["facts"] == [] and anonymous["traces"] == []
    assert body["facts"] == [PROJECT] * 4 + [OTHER_PROJECT] * 4
    assert body["decisions"] == 2


def test_a_staff_user_limited_to_a_project_sees_only_it_even_unfiltered(two_projects, roles):
    # given a staff user limited to the other project
    user = make_user("lena", staff=True, groups=["curators"])
    StaffProjectAccess.objects.create(user=user, project_id=OTHER_PROJECT)
    client = Client()
    client.force_login(user)
    # when a page reads everything without a filter
    body = client.get("/stats/test/unscoped").json()
    # then the database itself hands over only that project's rows
    assert body == _own(OTHER_PROJECT, body)


def test_the_request_runs_as_the_api_role_and_gives_it_back(api):
    # when a request asks the connection who it is
    body = api.get("/v1/test/connection").json()
    # then it ran as the API role with the key's project
    assert body == {"user": API_ROLE, "project": PROJECT}
    # and afterwards the connection is the connecting user again, with no project
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_user = session_user, coalesce(current_setting('hakimem.project_id', true), '')")
        assert cursor.fetchone() == (True, "")


@pytest.mark.django_db(transaction=True)
def test_no_project_reaches_the_next_use_of_a_connection():
    # given a request with a key, outside any test transaction (as in production: the request's own)
    client = make_client(PROJECT)
    assert client.get("/v1/test/connection").json() == {"user": API_ROLE, "project": PROJECT}
    # when the connection is used again, outside a request (as the pool hands it to the next request)
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_user = session_user, coalesce(current_setting('hakimem.project_id', true), '')")
        # then neither the role nor the project survived the request's transaction
        assert cursor.fetchone() == (True, "")
    # and a request without a key after it sees no project
    assert Client().get("/v1/test/unscoped-open").json()["facts"] == []


def test_the_roles_are_bound_by_row_security():
    # the roles a request runs as can neither bypass row security nor act as superusers
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT rolname, rolsuper, rolbypassrls FROM pg_roles WHERE rolname = ANY(%s) ORDER BY 1",
            [[API_ROLE, STAFF_ROLE]],
        )
        assert cursor.fetchall() == [(API_ROLE, False, False), (STAFF_ROLE, False, False)]
        cursor.execute("SELECT relname FROM pg_class WHERE relrowsecurity AND relkind = 'r' ORDER BY 1")
        assert [r[0] for r in cursor.fetchall()] == [
            "context_consolidationmark",
            "facts_conflictmember",
            "facts_conflictset",
            "facts_consent",
            "facts_event",
            "facts_fact",
            "facts_identityblock",
            "facts_procedure",
            "facts_project",
            "facts_scopeword",
            "facts_scopewordcounts",
            "facts_scopewrite",
            "hakimem_apikey",
            "ingest_factwritejob",
            "stats_daylatencies",
            "stats_factserved",
            "stats_hourlatencies",
            "stats_hourtotals",
            "stats_rollupmark",
            "stats_slicetotals",
            "stats_subjectday",
            "traces_decision",
            "traces_itemaccess",
            "traces_trace",
        ]


def test_without_the_database_an_api_request_answers_503_in_the_contract(api, monkeypatch):
    # given a database that refuses every statement (the request cannot even take its role)
    from django.db import OperationalError
    from django.db.backends.utils import CursorWrapper

    def refuse(self, *args, **kwargs):
        raise OperationalError("connection refused")

    monkeypatch.setattr(CursorWrapper, "execute", refuse)
    # when an API request comes
    response = api.get("/v1/facts", {"project_id": PROJECT, "subject_id": "alice"})
    # then it is refused as unavailable, in the error contract, rather than run without row security
    assert response.status_code == 503 and error_code(response) == "database_unavailable"
