"""Project settings and consent gating: GET/PATCH /v1/project, /v1/subjects/{s}/consents, and what they change
for the next write and the next context call."""

import pytest

from facts.models import ConflictSet, Consent, Fact, FactStatus, Project
from tests.conftest import OTHER_PROJECT, PROJECT, error_code
from traces.models import Decision, Trace

pytestmark = pytest.mark.django_db

HEALTH = "Alice takes insulin twice a day for her diabetes."
HOBBY = "Alice plays the cello in an amateur orchestra."


def write(api, text, category, subject="alice", expect=201):
    response = api.post(
        "/v1/facts", {"project_id": PROJECT, "subject_id": subject, "text": text, "category": category}, format="json"
    )
    assert response.status_code == expect, response.content
    return response.json()


def ask(api, query="What about Alice's health and her cello?", subject="alice"):
    response = api.post("/v1/context", {"project_id": PROJECT, "subject_id": subject, "query": query}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def reasons(packet) -> dict[str, str]:
    return {
        str(d.fact_id): d.reason_code for d in Decision.objects.filter(trace_id=packet["trace_id"], item_type="fact")
    }


def grant(api, category, subject="alice", expect=201):
    response = api.post(
        f"/v1/subjects/{subject}/consents", {"project_id": PROJECT, "category": category}, format="json"
    )
    assert response.status_code == expect, response.content
    return response.json()


def revoke(api, category, subject="alice", erase=False, expect=200):
    query = f"?project_id={PROJECT}" + ("&erase=true" if erase else "")
    response = api.delete(f"/v1/subjects/{subject}/consents/{category}{query}")
    assert response.status_code == expect, response.content
    return response.json()


def require_consent(api, **more):
    response = api.patch("/v1/project", {"consent_required": True, **more}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


# --- project settings ---------------------------------------------------------------------------------


def test_a_project_without_settings_answers_the_defaults(api, settings):
    body = api.get("/v1/project").json()
    assert body == {
        "project_id": PROJECT,
        "consent_required": False,
        "consent_write_policy": "refuse",
        "categories": [],
        "conflict_policy": settings.HAKI_CONFLICT_POLICY,
    }
    assert not Project.objects.exists()


def test_patch_changes_only_the_fields_sent(api):
    api.patch("/v1/project", {"categories": ["health", "hobby"]}, format="json")
    body = require_consent(api)
    assert body["categories"] == ["health", "hobby"] and body["consent_required"] is True
    assert Project.objects.get(project_id=PROJECT).categories == ["health", "hobby"]


@pytest.mark.parametrize(
    "payload, field",
    [
        ({"consent_required": "yes"}, "consent_required"),
        ({"consent_write_policy": "maybe"}, "consent_write_policy"),
        ({"categories": ["health", "health"]}, "categories"),
        ({"categories": [""]}, "categories"),
        ({"conflict_policy": "loudest_wins"}, "conflict_policy"),
        ({"colour": "blue"}, "colour"),
        ({}, "non_field_errors"),
    ],
)
def test_bad_project_settings_are_refused_and_nothing_is_stored(api, payload, field):
    response = api.patch("/v1/project", payload, format="json")
    assert response.status_code == 400 and error_code(response) == "invalid_request"
    assert field in {
        (e["field"] or "non_field_errors").split(".")[0].split("[")[0]
        for e in response.json()["error"]["details"]["errors"]
    }
    assert not Project.objects.exists()


def test_a_category_outside_the_projects_list_is_refused(api):
    api.patch("/v1/project", {"categories": ["health"]}, format="json")
    response = api.post(
        "/v1/facts", {"project_id": PROJECT, "subject_id": "alice", "text": HOBBY, "category": "hobby"}, format="json"
    )
    assert response.status_code == 400 and error_code(response) == "invalid_request"
    assert not Fact.objects.exists()


def test_the_projects_conflict_policy_overrides_the_environment(api, settings):
    settings.HAKI_CONFLICT_POLICY = "curator"
    api.patch("/v1/project", {"conflict_policy": "newest_wins"}, format="json")
    old = write(api, "Paul lives in Nantes with his wife and their two children.", "")
    new = write(api, "Paul lives in Bordeaux with his wife and their two children.", "")
    assert Fact.objects.get(id=old["id"]).status == FactStatus.SUPERSEDED
    assert ConflictSet.objects.get(id=new["conflict_set_id"]).status == "resolved"


# --- consents -----------------------------------------------------------------------------------------


def test_grant_revoke_and_grant_again_keep_the_history(api):
    first = grant(api, "health")
    assert first["revoked_at"] is None and first["granted_by"].startswith("api_key:")
    assert grant(api, "health", expect=200)["granted_at"] == first["granted_at"]  # already granted: the same one
    revoked = revoke(api, "health")
    assert revoked["consent"]["revoked_at"] is not None and revoked["erased"] is None
    grant(api, "health")
    body = api.get(f"/v1/subjects/alice/consents?project_id={PROJECT}").json()
    assert body["consented"] == ["health"]
    assert [c["revoked_at"] is None for c in body["history"]] == [False, True]


def test_revoking_a_category_never_granted_is_not_found(api):
    response = api.delete(f"/v1/subjects/alice/consents/health?project_id={PROJECT}")
    assert response.status_code == 404 and error_code(response) == "not_found"


def test_another_projects_key_sees_and_changes_no_consent(api, other_api):
    grant(api, "health")
    assert other_api.get(f"/v1/subjects/alice/consents?project_id={PROJECT}").status_code == 404
    response = other_api.post(
        "/v1/subjects/alice/consents", {"project_id": PROJECT, "category": "hobby"}, format="json"
    )
    assert response.status_code == 404
    assert other_api.delete(f"/v1/subjects/alice/consents/health?project_id={PROJECT}").status_code == 404
    assert Consent.objects.get().revoked_at is None
    assert other_api.get("/v1/project").json()["project_id"] == OTHER_PROJECT


# --- gating the context call --------------------------------------------------------------------------


def test_without_required_consent_every_category_is_served(api):
    health, hobby = write(api, HEALTH, "health"), write(api, HOBBY, "hobby")
    assert {f["id"] for f in ask(api)["facts"]} == {health["id"], hobby["id"]}


def test_required_consent_withholds_a_category_until_granted_and_from_the_next_call_after_revocation(api):
    health, hobby = write(api, HEALTH, "health"), write(api, HOBBY, "hobby")
    api.patch("/v1/project", {"consent_required": True, "consent_write_policy": "store"}, format="json")
    grant(api, "hobby")

    packet = ask(api)
    assert [f["id"] for f in packet["facts"]] == [hobby["id"]]
    assert reasons(packet)[health["id"]] == "consent_missing"
    assert Decision.objects.get(trace_id=packet["trace_id"], fact_id=health["id"]).decision == "blocked"
    assert "consent_missing: 1 fact(s) withheld without the subject's consent to their category" in packet["warnings"]
    assert HEALTH not in packet["rendered"]

    grant(api, "health")
    assert {f["id"] for f in ask(api)["facts"]} == {health["id"], hobby["id"]}
    revoke(api, "hobby")
    packet = ask(api)
    assert [f["id"] for f in packet["facts"]] == [health["id"]] and reasons(packet)[hobby["id"]] == "consent_missing"


def test_under_required_consent_a_fact_without_category_is_refused(api):
    require_consent(api)
    response = api.post("/v1/facts", {"project_id": PROJECT, "subject_id": "alice", "text": HOBBY}, format="json")
    assert response.status_code == 400 and error_code(response) == "invalid_request"
    assert not Fact.objects.exists()


def test_refuse_policy_answers_403_consent_missing_and_writes_nothing(api):
    require_consent(api)  # refuse is the default write policy
    grant(api, "hobby")
    response = api.post(
        "/v1/facts",
        {
            "facts": [
                {"project_id": PROJECT, "subject_id": "alice", "text": HOBBY, "category": "hobby"},
                {"project_id": PROJECT, "subject_id": "alice", "text": HEALTH, "category": "health"},
            ]
        },
        format="json",
    )
    assert response.status_code == 403 and error_code(response) == "consent_missing"
    assert response.json()["error"]["details"]["errors"] == [
        {"index": 1, "field": "category", "message": "the subject has not consented to the category 'health'"}
    ]
    assert not Fact.objects.exists()  # all or nothing: the consented one is not written either


def test_store_policy_keeps_the_fact_and_serves_it_once_consent_is_given(api):
    require_consent(api, consent_write_policy="store")
    health = write(api, HEALTH, "health")
    assert ask(api)["facts"] == []
    grant(api, "health")
    assert [f["id"] for f in ask(api)["facts"]] == [health["id"]]


def test_patch_into_an_unconsented_category_is_refused(api):
    require_consent(api)
    grant(api, "hobby")
    hobby = write(api, HOBBY, "hobby")
    response = api.patch(f"/v1/facts/{hobby['id']}", {"category": "health"}, format="json")
    assert response.status_code == 403 and error_code(response) == "consent_missing"
    assert Fact.objects.get(id=hobby["id"]).category == "hobby"


# --- revocation that erases -----------------------------------------------------------------------------


def test_revoke_with_erase_deletes_the_category_its_traces_and_its_conflict_sets(api):
    require_consent(api, consent_write_policy="store")
    grant(api, "health")
    grant(api, "hobby")
    first = write(api, "Alice takes 10 units of insulin every morning.", "health")
    second = write(api, "Alice takes 14 units of insulin every morning.", "health")  # opens a conflict set
    assert second["conflict_set_id"]
    hobby = write(api, HOBBY, "hobby")
    served = ask(api, "What does Alice take in the morning, and what does she play?")
    hobby_only = ask(api, "cello orchestra")
    assert hobby["id"] in {f["id"] for f in hobby_only["facts"]}

    body = revoke(api, "health", erase=True)
    assert body["consent"]["revoked_at"] is not None
    receipt = body["erased"]
    assert receipt["facts"] == 2 and receipt["conflict_sets"] == 1 and receipt["conflict_members"] == 2
    assert receipt["traces"] >= 1 and receipt["decisions"] >= 2
    assert set(Fact.objects.values_list("id", flat=True)) == {__import__("uuid").UUID(hobby["id"])}
    assert not ConflictSet.objects.exists()
    assert not Trace.objects.filter(id=served["trace_id"]).exists()  # it named an erased fact
    assert not Decision.objects.filter(fact_id__in=[first["id"], second["id"]]).exists()
    assert not Trace.objects.filter(rendered__contains="insulin").exists()
    # the consent history stays: the revocation is the record of the subject's choice
    assert Consent.objects.filter(category="health").count() == 1


def test_erasing_the_subject_erases_its_consents(api):
    grant(api, "health")
    response = api.delete(f"/v1/subjects/alice?project_id={PROJECT}")
    assert response.status_code == 200 and response.json()["deleted"]["consents"] == 1
    assert not Consent.objects.exists()
