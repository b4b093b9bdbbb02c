"""The curators' admin for facts and conflict sets: lists, filters, the side-by-side conflict page, and the
actions, which run the same services as the API."""

import re
from datetime import timedelta

import pytest
from django.contrib.admin.models import LogEntry
from django.utils import timezone

from facts.models import ConflictMember, ConflictSet, Fact
from tests.conftest import OTHER_PROJECT, PROJECT, make_user
from tests.facts.factories import EventFactory, FactFactory
from tests.traces.factories import record_call

pytestmark = pytest.mark.django_db

NANTES = "Paul lives in Nantes with his wife and their two children."
BORDEAUX = "Paul lives in Bordeaux with his wife and their two children."
LILLE = "Paul lives in Lille with his wife and their two children."


def post_fact(api, text, subject="paul", project=PROJECT, **extra):
    response = api.post(
        "/v1/facts", {"project_id": project, "subject_id": subject, "text": text, **extra}, format="json"
    )
    assert response.status_code == 201, response.content
    return response.json()


@pytest.fixture
def conflict(api):
    """An open conflict set opened through the API: Nantes (fact 1) against Bordeaux (fact 2)."""
    nantes = post_fact(api, NANTES)
    bordeaux = post_fact(api, BORDEAUX)
    return ConflictSet.objects.get(id=bordeaux["conflict_set_id"]), nantes["id"], bordeaux["id"]


def as_curator(client, curator):
    client.force_login(curator)
    return client


def change_url(obj):
    return f"/admin/{obj._meta.app_label}/{obj._meta.model_name}/{obj.pk}/change/"


def resolve_url(conflict_set):
    return f"/admin/facts/conflictset/{conflict_set.pk}/resolve/"


def listed(client, url, **params) -> str:
    response = client.get(url, params)
    assert response.status_code == 200, response.status_code
    return response.content.decode()


# --- conflict sets: list ------------------------------------------------------------------------------


def test_open_conflicts_come_first(client, curator, conflict):
    conflict_set, _, _ = conflict
    other = FactFactory(text="Paul is vegetarian.", subject_id="paul")
    closed = ConflictSet.objects.create(
        project_id=PROJECT,
        subject_id="paul",
        status="dismissed",
        signal="negation",
        similarity=0.8,
        opened_at=timezone.now() + timedelta(minutes=1),
        resolved_at=timezone.now() + timedelta(minutes=2),
    )
    ConflictMember.objects.create(project_id=PROJECT, conflict_set=closed, fact=other, added_at=timezone.now())
    html = listed(as_curator(client, curator), "/admin/facts/conflictset/")
    assert html.index(str(conflict_set.pk)) < html.index(str(closed.pk))  # the open one, though older, first
    assert f"{NANTES} ↔ {BORDEAUX}" in html


def test_conflict_filters_and_search_by_fact_text(client, curator, conflict, other_api):
    conflict_set, _, _ = conflict
    post_fact(other_api, NANTES.replace("Paul", "Rita"), subject="rita", project=OTHER_PROJECT)
    post_fact(other_api, BORDEAUX.replace("Paul", "Rita"), subject="rita", project=OTHER_PROJECT)
    as_curator(client, curator)
    url = "/admin/facts/conflictset/"
    assert "1 conflict set" in listed(client, url, project_id=PROJECT)
    assert "1 conflict set" in listed(client, url, subject_id="rita")
    assert "0 conflict sets" in listed(client, url, subject_id="nobody")
    assert "2 conflict sets" in listed(client, url, status__exact="open")
    assert "2 conflict sets" in listed(client, url, age="day") and "0 conflict sets" in listed(client, url, age="older")
    assert "1 conflict set" in listed(client, url, q="Bordeaux", project_id=PROJECT)
    assert "0 conflict sets" in listed(client, url, q="Marseille")


def test_the_subject_box_keeps_the_other_filters(client, curator, conflict):
    html = listed(as_curator(client, curator), "/admin/facts/conflictset/", project_id=PROJECT, q="Nantes")
    form = re.search(r'<form method="get" class="input-filter">(.*?)</form>', html, re.S).group(1)
    assert f'name="project_id" value="{PROJECT}"' in form and 'name="q" value="Nantes"' in form
    assert 'name="subject_id"' in form


# --- conflict sets: the side-by-side page ------------------------------------------------------------


def test_members_side_by_side_with_similarity_dates_events_and_decisions(client, curator, api):
    event = EventFactory(text="Paul talked about moving.", subject_id="paul")
    nantes = post_fact(api, NANTES, source_event_id=str(event.id), category="home")
    bordeaux = post_fact(api, BORDEAUX)
    conflict_set = ConflictSet.objects.get(id=bordeaux["conflict_set_id"])
    fact = Fact.objects.get(id=nantes["id"])
    record_call(at=timezone.now(), subject_id="paul", facts=[(fact, "included")])
    record_call(at=timezone.now(), subject_id="paul", facts=[(fact, "conflict_open")])

    html = listed(as_curator(client, curator), change_url(conflict_set))
    assert html.index(BORDEAUX) < html.index(NANTES)  # newest first, as facts 1 and 2
    assert 'id="reading"' in html and "residence" in html  # what was read as contradicting
    similarity = round(conflict_set.similarity, 3)
    assert html.count(f"<strong>{similarity:.3f}</strong>") == 2  # each to the other
    assert f"/admin/facts/event/{event.pk}/change/" in html and "Paul talked about moving." in html
    assert "<td>home</td>" in html
    assert f'/admin/traces/trace/?fact={fact.pk}&amp;decision=included">1 time</a>' in html
    assert f'/admin/traces/trace/?fact={fact.pk}&amp;decision=blocked">1 time</a>' in html
    assert html.count('name="keep"') == 2 and 'value="retract_all"' in html
    assert 'type="submit" name="_save"' not in html  # nothing to save: changes go through the actions


def test_keep_one_asks_for_a_note_then_runs_conflict_resolve(client, curator, conflict):
    conflict_set, nantes, bordeaux = conflict
    as_curator(client, curator)
    confirm = listed(client, resolve_url(conflict_set), action="keep", keep=bordeaux)
    assert "superseded by fact 1" in confirm and NANTES in confirm and 'name="note"' in confirm
    assert ConflictSet.objects.get().status == "open"  # asking changes nothing

    response = client.post(resolve_url(conflict_set), {"action": "keep", "keep": bordeaux, "note": "Moved in May."})
    assert response.status_code == 302 and response["Location"] == change_url(conflict_set)
    conflict_set.refresh_from_db()
    assert (conflict_set.status, conflict_set.resolved_by, conflict_set.note) == (
        "resolved",
        "user:cora",
        "Moved in May.",
    )
    assert Fact.objects.get(id=bordeaux).status == "active"
    old = Fact.objects.get(id=nantes)
    assert old.status == "superseded" and str(old.superseded_by_id) == bordeaux
    assert set(conflict_set.members.values_list("kept", flat=True)) == {True, False}
    page = listed(client, change_url(conflict_set))
    assert "by <strong>user:cora</strong>" in page and "Moved in May." in page and 'name="keep"' not in page
    assert LogEntry.objects.get(object_id=str(conflict_set.pk)).get_change_message().startswith("Keep the ticked facts")


def test_keep_several_supersedes_the_others_by_the_first_kept(client, curator, api):
    post_fact(api, NANTES)
    bordeaux = post_fact(api, BORDEAUX)
    lille = post_fact(api, LILLE)
    conflict_set = ConflictSet.objects.get()
    assert conflict_set.members.count() == 3
    as_curator(client, curator).post(
        resolve_url(conflict_set), {"action": "keep", "keep": [bordeaux["id"], lille["id"]]}
    )
    assert dict(Fact.objects.values_list("text", "status")) == {
        NANTES: "superseded",
        BORDEAUX: "active",
        LILLE: "active",
    }
    assert str(Fact.objects.get(text=NANTES).superseded_by_id) == bordeaux["id"]


def test_dismiss_keeps_every_fact_and_unblocks_them(client, curator, conflict, api):
    conflict_set, _, _ = conflict
    as_curator(client, curator).post(resolve_url(conflict_set), {"action": "dismiss"})
    conflict_set.refresh_from_db()
    assert conflict_set.status == "dismissed" and conflict_set.note == ""
    assert set(Fact.objects.values_list("status", flat=True)) == {"active"}
    packet = api.post(
        "/v1/context", {"project_id": PROJECT, "subject_id": "paul", "query": "Where does Paul live?"}, format="json"
    ).json()
    assert len(packet["facts"]) == 2


def test_retract_all(client, curator, conflict):
    conflict_set, _, _ = conflict
    confirm = listed(as_curator(client, curator), resolve_url(conflict_set), action="retract_all")
    assert "Every fact of the set is retracted" in confirm
    client.post(resolve_url(conflict_set), {"action": "retract_all", "note": "Both wrong."})
    assert set(Fact.objects.values_list("status", flat=True)) == {"retracted"}
    assert ConflictSet.objects.get().status == "resolved"


def test_keep_without_ticking_a_fact_changes_nothing(client, curator, conflict):
    conflict_set, _, _ = conflict
    response = as_curator(client, curator).post(resolve_url(conflict_set), {"action": "keep"}, follow=True)
    assert "Tick the fact or facts to keep first." in response.content.decode()
    assert ConflictSet.objects.get().status == "open"


def test_a_closed_set_cannot_be_resolved_again(client, curator, conflict):
    conflict_set, nantes, _ = conflict
    as_curator(client, curator).post(resolve_url(conflict_set), {"action": "dismiss"})
    response = client.post(resolve_url(conflict_set), {"action": "keep", "keep": nantes}, follow=True)
    assert "already dismissed (user:cora)" in response.content.decode()
    assert ConflictSet.objects.get().status == "dismissed"


def test_viewing_is_not_resolving(client, roles, conflict):
    from django.contrib.auth.models import Permission

    viewer = make_user("vera", staff=True)
    viewer.user_permissions.set(Permission.objects.filter(codename__in=["view_conflictset", "view_fact"]))
    client.force_login(viewer)
    conflict_set, nantes, _ = conflict
    assert 'name="keep"' not in listed(client, change_url(conflict_set))
    assert client.post(resolve_url(conflict_set), {"action": "keep", "keep": nantes}).status_code == 403
    assert ConflictSet.objects.get().status == "open"


# --- facts --------------------------------------------------------------------------------------------


def test_fact_filters(client, curator, conflict):
    long_ago = timezone.now() - timedelta(days=30)
    FactFactory(
        text="Paul is in Peru this week.",
        subject_id="paul",
        volatility="volatile",
        recorded_from=long_ago,
        last_confirmed_at=long_ago,
    )
    FactFactory(text="Rita sails.", project_id=OTHER_PROJECT, subject_id="rita")
    as_curator(client, curator)
    url = "/admin/facts/fact/"
    assert "4 facts" in listed(client, url)
    assert "1 fact" in listed(client, url, expired="yes") and "Paul is in Peru" in listed(client, url, expired="yes")
    assert "2 facts" in listed(client, url, in_open_conflict="yes")
    assert "2 facts" in listed(client, url, in_open_conflict="no")
    assert "1 fact" in listed(client, url, project_id=OTHER_PROJECT)
    assert "3 facts" in listed(client, url, subject_id="paul")
    assert "1 fact" in listed(client, url, volatility__exact="volatile")
    assert "1 fact" in listed(client, url, q="Bordeaux")


def test_fact_page_shows_its_decisions_with_links_to_the_traces(client, curator):
    fact = FactFactory(text="Alice grows tomatoes.")
    now = timezone.now()
    record_call(at=now, facts=[(fact, "included")])
    record_call(at=now, facts=[(fact, "multi_hop_expansion")])
    record_call(at=now, facts=[(fact, "over_budget")])
    record_call(at=now, facts=[(fact, "volatility_expired")])
    html = listed(as_curator(client, curator), change_url(fact))
    assert "Served in 2 context calls, excluded 1 time, blocked 1 time." in html
    assert f'?fact={fact.pk}&amp;decision=included">2</a>' in html
    assert f'?fact={fact.pk}&amp;reason_code=over_budget"><code>over_budget</code>: 1</a>' in html


def test_fact_page_shows_the_version_chain(client, curator, api):
    first = post_fact(api, "Alice works at the bakery.", subject="alice")
    second = api.patch(f"/v1/facts/{first['id']}", {"text": "Alice works at the library."}, format="json").json()
    html = listed(as_curator(client, curator), change_url(Fact.objects.get(id=second["id"])))
    chain = html[html.index('id="fact-versions"') :]
    assert chain.index("Alice works at the bakery.") < chain.index("Alice works at the library.</strong> (this one)")
    assert f"/admin/facts/fact/{first['id']}/change/" in chain


def test_facts_are_not_edited_added_or_deleted_in_the_admin(client, curator, conflict):
    _, nantes, _ = conflict
    fact = Fact.objects.get(id=nantes)
    as_curator(client, curator)
    assert client.post(change_url(fact), {"text": "Paul lives on the moon."}).status_code == 405
    assert Fact.objects.get(id=nantes).text == NANTES
    assert client.get("/admin/facts/fact/add/").status_code == 403
    assert client.get(f"/admin/facts/fact/{fact.pk}/delete/").status_code == 403


def test_retract_a_fact_through_fact_retract(client, curator):
    fact = FactFactory(text="Alice owns a boat.")
    as_curator(client, curator)
    assert f"/admin/facts/fact/{fact.pk}/retract/" in listed(client, change_url(fact))
    assert "will not be served again" in listed(client, f"/admin/facts/fact/{fact.pk}/retract/")
    client.post(f"/admin/facts/fact/{fact.pk}/retract/")
    fact.refresh_from_db()
    assert fact.status == "retracted" and fact.recorded_to is not None
    assert "/retract/" not in listed(client, change_url(fact))


def test_events_are_filtered_by_extraction_status_and_show_it(client, curator):
    # given an event whose extraction failed and one written with extraction off
    failed = EventFactory(
        text="Alice spoke of her garden.", extraction_status="failed", extraction_attempts=1, extraction_error="timeout"
    )
    EventFactory(text="Alice spoke of her cat.")
    as_curator(client, curator)
    # when the curator lists the failed ones, then only that event is listed
    html = listed(client, "/admin/facts/event/", extraction_status__exact="failed")
    assert "Alice spoke of her garden." in html and "Alice spoke of her cat." not in html
    # and its page shows the status and the error
    page = listed(client, f"/admin/facts/event/{failed.pk}/change/")
    assert "failed" in page.lower() and "timeout" in page


# --- identity blocks and procedures: written here through the API's services ------------------------------


def test_a_curator_adds_edits_and_deletes_an_identity_block(client, curator):
    from facts.models import IdentityBlock

    as_curator(client, curator)
    form = {
        "project_id": PROJECT,
        "subject_id": "",
        "name": "persona",
        "text": "You are a patient tutor.",
        "position": 0,
        "enabled": "on",
        "metadata": "{}",
    }
    response = client.post("/admin/facts/identityblock/add/", form)
    assert response.status_code == 302, response.content.decode()[:2000]
    block = IdentityBlock.objects.get()
    assert (block.subject_id, block.text, block.enabled) == ("", "You are a patient tutor.", True)
    # the same name again in the same scope is refused beside the form, and nothing is written
    again = client.post("/admin/facts/identityblock/add/", form)
    assert again.status_code == 200 and "already has an identity block named" in again.content.decode()
    assert IdentityBlock.objects.count() == 1
    listing = listed(client, "/admin/facts/identityblock/")
    assert "persona" in listing and "(whole project)" in listing
    edited = client.post(
        change_url(block), {"name": "persona", "text": "You are brief.", "position": 2, "metadata": "{}"}
    )  # enabled unticked
    assert edited.status_code == 302
    block.refresh_from_db()
    assert (block.text, block.position, block.enabled) == ("You are brief.", 2, False)
    assert client.post(f"/admin/facts/identityblock/{block.pk}/delete/", {"post": "yes"}).status_code == 302
    assert not IdentityBlock.objects.exists()


def test_a_curator_limited_to_a_project_cannot_write_a_block_to_another(client, roles):
    from facts.models import IdentityBlock
    from hakimem.models import StaffProjectAccess

    limited = make_user("lim", staff=True, groups=["curators"])
    StaffProjectAccess.objects.create(user=limited, project_id=PROJECT)
    client.force_login(limited)
    response = client.post(
        "/admin/facts/identityblock/add/",
        {
            "project_id": OTHER_PROJECT,
            "subject_id": "",
            "name": "persona",
            "text": "x",
            "position": 0,
            "metadata": "{}",
        },
    )
    assert response.status_code == 200 and "You may not write to this project." in response.content.decode()
    assert not IdentityBlock.objects.exists()


def test_a_curator_adds_a_procedure_embedded_and_retracts_it(client, curator):
    from facts.models import Procedure

    as_curator(client, curator)
    response = client.post(
        "/admin/facts/procedure/add/",
        {
            "project_id": PROJECT,
            "subject_id": "alice",
            "title": "How Alice likes reports",
            "text": "A summary first.",
            "category": "",
            "importance": 0.7,
            "metadata": "{}",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    procedure = Procedure.objects.get()
    assert procedure.importance == 0.7 and any(procedure.embedding.to_list())
    response = client.post("/admin/facts/procedure/", {"action": "retract", "_selected_action": [str(procedure.pk)]})
    assert response.status_code == 302
    procedure.refresh_from_db()
    assert procedure.status == "retracted"
    assert LogEntry.objects.filter(object_id=str(procedure.pk), change_message="Retracted.").exists()
    # a retracted procedure's page shows it and offers nothing to change
    page = listed(client, change_url(procedure))
    assert "A summary first." in page and 'name="title"' not in page
