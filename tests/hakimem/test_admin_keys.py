"""The admin of API keys and of who sees which project. Keys are made and revoked by commands and services
(hakimem.services): in the admin a key is read only, and revoking it is an action that calls api_key_revoke. A staff
user limited to projects sees, and acts on, only its projects' rows in every admin model."""

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse
from django.utils import timezone

from facts.models import Consent, Project
from hakimem.models import ApiKey, StaffProjectAccess
from hakimem.services import api_key_create
from tests.conftest import OTHER_PROJECT, PROJECT, make_user

pytestmark = pytest.mark.django_db


def _given(user, *codenames):
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    return user


@pytest.fixture
def keys(db):
    return {
        project: api_key_create(project_id=project, label=f"key of {project}")[0]
        for project in (PROJECT, OTHER_PROJECT)
    }


@pytest.fixture
def key_keeper(db):
    """Staff limited to PROJECT, holding every permission on keys and on who sees which project."""
    user = _given(
        make_user("kim", staff=True),
        "add_apikey",
        "change_apikey",
        "delete_apikey",
        "view_apikey",
        "add_staffprojectaccess",
        "change_staffprojectaccess",
        "delete_staffprojectaccess",
        "view_staffprojectaccess",
        "view_consent",
        "view_project",
        "add_project",
        "change_project",
    )
    StaffProjectAccess.objects.create(user=user, project_id=PROJECT)
    return user


def _key_form(key, **changes) -> dict:
    data = {"project_id": key.project_id, "label": key.label, "revoked_at_0": "", "revoked_at_1": ""}
    return {**data, **changes}


def test_a_key_cannot_be_moved_to_another_project_or_unrevoked(client, keys, key_keeper):
    # given a revoked key of the keeper's project
    key = keys[PROJECT]
    key.revoked_at = timezone.now()
    key.save()
    client.force_login(key_keeper)
    url = reverse("admin:hakimem_apikey_change", args=[key.pk])
    # when the keeper posts the key's form with another project and no revocation
    response = client.post(url, _key_form(key, project_id=OTHER_PROJECT))
    # then nothing changes: the page is read only
    assert response.status_code == 403
    key.refresh_from_db()
    assert key.project_id == PROJECT and key.revoked_at is not None
    page = client.get(url)
    assert page.status_code == 200
    assert b'name="project_id"' not in page.content and b'name="revoked_at_0"' not in page.content


def test_keys_are_not_added_or_deleted_in_the_admin(client, keys, key_keeper):
    client.force_login(key_keeper)
    added = client.post(reverse("admin:hakimem_apikey_add"), {"project_id": PROJECT, "label": "x"})
    deleted = client.post(reverse("admin:hakimem_apikey_delete", args=[keys[PROJECT].pk]), {"post": "yes"})
    assert added.status_code == 403 and deleted.status_code == 403
    assert ApiKey.objects.count() == 2


def test_revoking_keys_is_an_action_on_the_keepers_own_projects(client, keys, key_keeper):
    # given a key in each project, and the keeper limited to PROJECT
    client.force_login(key_keeper)
    # when the keeper selects both keys (one of them not its project's) and revokes them
    response = client.post(
        reverse("admin:hakimem_apikey_changelist"),
        {"action": "revoke", "_selected_action": [keys[PROJECT].pk, keys[OTHER_PROJECT].pk]},
    )
    # then only its project's key is revoked
    assert response.status_code == 302
    assert ApiKey.objects.get(pk=keys[PROJECT].pk).revoked_at is not None
    assert ApiKey.objects.get(pk=keys[OTHER_PROJECT].pk).revoked_at is None


def test_a_limited_keeper_lists_only_its_projects_keys(client, keys, key_keeper):
    client.force_login(key_keeper)
    html = client.get(reverse("admin:hakimem_apikey_changelist")).content.decode()
    assert f"key of {PROJECT}" in html and f"key of {OTHER_PROJECT}" not in html


def test_a_limited_staff_user_cannot_change_who_sees_which_project(client, key_keeper):
    # given another staff user limited to OTHER_PROJECT
    other = make_user("olga", staff=True)
    theirs = StaffProjectAccess.objects.create(user=other, project_id=OTHER_PROJECT)
    client.force_login(key_keeper)
    # when the limited keeper lists the limits, deletes its own (which would lift it), or gives itself a project
    listed = client.get(reverse("admin:hakimem_staffprojectaccess_changelist")).content.decode()
    own = StaffProjectAccess.objects.get(user=key_keeper)
    deleted = client.post(reverse("admin:hakimem_staffprojectaccess_delete", args=[own.pk]), {"post": "yes"})
    added = client.post(
        reverse("admin:hakimem_staffprojectaccess_add"), {"user": key_keeper.pk, "project_id": OTHER_PROJECT}
    )
    # then it sees only its projects' limits and changes none
    assert f'field-project_id">{PROJECT}<' in listed and f'field-project_id">{OTHER_PROJECT}<' not in listed
    assert deleted.status_code == 403 and added.status_code == 403
    assert set(StaffProjectAccess.objects.values_list("pk", flat=True)) == {own.pk, theirs.pk}


def test_a_limited_staff_user_sees_only_its_projects_consents_and_settings(client, key_keeper):
    for project in (PROJECT, OTHER_PROJECT):
        Consent.objects.create(
            project_id=project, subject_id=f"subject-of-{project}", category="health", granted_at=timezone.now()
        )
        Project.objects.create(project_id=project, categories=[f"category-of-{project}"])
    client.force_login(key_keeper)
    consents = client.get(reverse("admin:facts_consent_changelist")).content.decode()
    projects = client.get(reverse("admin:facts_project_changelist")).content.decode()
    assert f"subject-of-{PROJECT}" in consents and f"subject-of-{OTHER_PROJECT}" not in consents
    assert f">{PROJECT}<" in projects and f">{OTHER_PROJECT}<" not in projects


def test_project_settings_are_added_only_for_ones_own_projects(client, key_keeper):
    client.force_login(key_keeper)
    form = {"consent_write_policy": "refuse", "categories": "[]", "conflict_policy": ""}
    # when the limited user adds settings for a project it is not given
    response = client.post(reverse("admin:facts_project_add"), {"project_id": OTHER_PROJECT, **form})
    # then the form says so, and nothing is written
    assert response.status_code == 200
    assert "You may not write to this project." in response.content.decode()
    assert not Project.objects.filter(project_id=OTHER_PROJECT).exists()
    # while its own project's settings are saved
    response = client.post(reverse("admin:facts_project_add"), {"project_id": PROJECT, **form})
    assert response.status_code == 302 and Project.objects.filter(project_id=PROJECT).exists()
