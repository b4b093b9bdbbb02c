"""/v1/identity-blocks and /v1/procedures: the always-on texts and the workflows of a project or a subject."""

import socket

import pytest
from django.contrib.postgres.search import SearchQuery

from facts import selectors
from facts.identity import identity_block_create
from facts.procedures import procedure_embedding_text
from facts.models import IDENTITY_BLOCKS_PER_SCOPE, IdentityBlock, Procedure
from hakimem.embeddings import get_embedder
from tests.conftest import OTHER_PROJECT, PROJECT, error_code

pytestmark = pytest.mark.django_db


def block(name, text="Answer in French.", subject="alice", **extra):
    body = {"project_id": PROJECT, "name": name, "text": text, **extra}
    if subject is not None:
        body["subject_id"] = subject
    return body


def post_block(api, name, **extra):
    response = api.post("/v1/identity-blocks", block(name, **extra), format="json")
    assert response.status_code == 201, response.content
    return response.json()


def procedure(
    title="How we deploy",
    text="1. Tag the release. 2. Run the pipeline. 3. Watch the dashboards.",
    subject="alice",
    **extra,
):
    body = {"project_id": PROJECT, "title": title, "text": text, **extra}
    if subject is not None:
        body["subject_id"] = subject
    return body


def post_procedure(api, **extra):
    response = api.post("/v1/procedures", procedure(**extra), format="json")
    assert response.status_code == 201, response.content
    return response.json()


# --- identity blocks ----------------------------------------------------------------------------------


def test_an_identity_block_is_written_with_its_token_cost(api):
    body = post_block(api, "persona", text="You are a patient tutor." * 4, position=3, metadata={"by": "ops"})
    assert body["subject_id"] == "alice" and body["name"] == "persona" and body["position"] == 3
    assert body["enabled"] is True and body["metadata"] == {"by": "ops"}
    assert body["tokens"] == len("You are a patient tutor." * 4) // 4
    assert api.get(f"/v1/identity-blocks/{body['id']}").json() == body


def test_a_project_wide_block_has_no_subject_and_comes_first_in_a_subjects_list(api):
    # given a block of alice, a project-wide one written later, and one of bob
    post_block(api, "tone", position=0)
    wide = post_block(api, "persona", subject=None, position=5)
    post_block(api, "bob's", subject="bob")
    assert wide["subject_id"] is None
    # when alice's list is read, then the project's list
    alices = api.get("/v1/identity-blocks", {"project_id": PROJECT, "subject_id": "alice"}).json()["identity_blocks"]
    project = api.get("/v1/identity-blocks", {"project_id": PROJECT}).json()["identity_blocks"]
    # then alice sees the project-wide block first, then her own; the project's list holds the project-wide only
    assert [b["name"] for b in alices] == ["persona", "tone"]
    assert [b["name"] for b in project] == ["persona"]


def test_blocks_are_served_by_scope_then_position_then_name_enabled_only(api):
    post_block(api, "b", position=1)
    post_block(api, "a", position=1)
    post_block(api, "z", position=0)
    post_block(api, "off", position=0, enabled=False)
    post_block(api, "wide", subject=None, position=9)
    post_block(api, "bob's", subject="bob")
    served = selectors.identity_blocks_for(project_id=PROJECT, subject_id="alice")
    assert [(b.name, b.project_wide) for b in served] == [("wide", True), ("z", False), ("a", False), ("b", False)]
    assert served[0].tokens == len("Answer in French.") // 4
    # the list (for the API) keeps disabled ones, in the same order
    listed = api.get("/v1/identity-blocks", {"project_id": PROJECT, "subject_id": "alice"}).json()["identity_blocks"]
    assert [b["name"] for b in listed] == ["wide", "off", "z", "a", "b"]


def test_identity_blocks_for_is_one_query(django_assert_num_queries):
    identity_block_create(project_id=PROJECT, subject_id="", name="persona", text="Be brief.")
    identity_block_create(project_id=PROJECT, subject_id="alice", name="tone", text="Be warm.")
    with django_assert_num_queries(1):
        served = selectors.identity_blocks_for(project_id=PROJECT, subject_id="alice")
    assert [b.name for b in served] == ["persona", "tone"]


def test_a_name_is_unique_in_its_scope_only(api):
    post_block(api, "persona")
    again = api.post("/v1/identity-blocks", block("persona"), format="json")
    assert again.status_code == 400 and error_code(again) == "invalid_request"
    assert again.json()["error"]["details"]["errors"][0]["field"] == "name"
    post_block(api, "persona", subject="bob")  # another scope
    post_block(api, "persona", subject=None)  # the project's
    assert IdentityBlock.objects.count() == 3


def test_a_scope_holds_a_bounded_number_of_blocks(api):
    for n in range(IDENTITY_BLOCKS_PER_SCOPE):
        identity_block_create(project_id=PROJECT, subject_id="alice", name=f"b{n}", text="x")
    response = api.post("/v1/identity-blocks", block("one more"), format="json")
    assert response.status_code == 400 and error_code(response) == "invalid_request"
    assert IdentityBlock.objects.count() == IDENTITY_BLOCKS_PER_SCOPE


@pytest.mark.parametrize(
    "bad, field",
    [
        ({"text": ""}, "text"),
        ({"text": "   "}, "text"),
        ({"text": "x" * 4001}, "text"),
        ({"text": 12}, "text"),
        ({"name": ""}, "name"),
        ({"name": "two\nlines"}, "name"),
        ({"name": "n" * 101}, "name"),
        ({"position": -1}, "position"),
        ({"position": 2**31}, "position"),
        ({"position": "3"}, "position"),
        ({"position": 1.5}, "position"),
        ({"enabled": "yes"}, "enabled"),
        ({"metadata": []}, "metadata"),
        ({"subject_id": ""}, "subject_id"),
        ({"subject_id": "bad subject"}, "subject_id"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_bad_identity_blocks_are_refused_and_nothing_is_written(api, bad, field):
    response = api.post("/v1/identity-blocks", {**block("persona"), **bad}, format="json")
    assert response.status_code == 400 and error_code(response) == "invalid_request"
    assert field in {e["field"] for e in response.json()["error"]["details"]["errors"]}
    assert not IdentityBlock.objects.exists()


def test_a_block_is_edited_and_deleted(api):
    body = post_block(api, "persona")
    post_block(api, "tone")
    patched = api.patch(
        f"/v1/identity-blocks/{body['id']}",
        {"text": "Answer in English.", "enabled": False, "position": 2},
        format="json",
    )
    assert patched.status_code == 200, patched.content
    assert patched.json()["text"] == "Answer in English." and patched.json()["enabled"] is False
    assert patched.json()["updated_at"] >= body["updated_at"]
    clash = api.patch(f"/v1/identity-blocks/{body['id']}", {"name": "tone"}, format="json")
    assert clash.status_code == 400 and error_code(clash) == "invalid_request"
    empty = api.patch(f"/v1/identity-blocks/{body['id']}", {}, format="json")
    assert empty.status_code == 400
    deleted = api.delete(f"/v1/identity-blocks/{body['id']}")
    assert deleted.status_code == 204
    assert api.get(f"/v1/identity-blocks/{body['id']}").status_code == 404
    assert api.delete(f"/v1/identity-blocks/{body['id']}").status_code == 404


def test_identity_blocks_are_scoped_to_the_keys_project(api, other_api):
    body = post_block(api, "persona")
    refused = other_api.post("/v1/identity-blocks", block("persona"), format="json")  # PROJECT's scope, other key
    assert refused.status_code == 404 and error_code(refused) == "not_found"
    assert other_api.get(f"/v1/identity-blocks/{body['id']}").status_code == 404
    assert other_api.patch(f"/v1/identity-blocks/{body['id']}", {"text": "x"}, format="json").status_code == 404
    assert other_api.delete(f"/v1/identity-blocks/{body['id']}").status_code == 404
    assert other_api.get("/v1/identity-blocks", {"project_id": PROJECT}).status_code == 404
    assert other_api.get("/v1/identity-blocks", {"project_id": OTHER_PROJECT}).json() == {"identity_blocks": []}
    assert IdentityBlock.objects.get().text == "Answer in French."


# --- procedures ---------------------------------------------------------------------------------------


def test_a_procedure_is_written_embedded_and_indexed_for_words(api):
    body = post_procedure(api, category="ops", importance=0.8, metadata={"team": "infra"})
    assert body["status"] == "active" and body["subject_id"] == "alice" and body["category"] == "ops"
    assert body["importance"] == 0.8 and body["metadata"] == {"team": "infra"}
    stored = Procedure.objects.get(id=body["id"])
    expected = get_embedder().embed([procedure_embedding_text(body["title"], body["text"])])[0]
    assert list(stored.embedding.to_list()) == pytest.approx(list(expected), abs=1e-3)
    # the title and the steps are both searchable
    assert Procedure.objects.filter(search_vector=SearchQuery("deploy", config="simple")).exists()
    assert Procedure.objects.filter(search_vector=SearchQuery("dashboards", config="simple")).exists()
    assert api.get(f"/v1/procedures/{body['id']}").json() == body


def test_procedures_list_a_subjects_own_and_the_project_wide_ones_newest_first_by_pages(api):
    first = post_procedure(api, title="Alice's reports", subject="alice")
    wide = post_procedure(api, title="How we deploy", subject=None)
    post_procedure(api, title="Bob's reports", subject="bob")
    third = post_procedure(api, title="Alice's meetings", subject="alice")
    page = api.get("/v1/procedures", {"project_id": PROJECT, "subject_id": "alice", "limit": 2}).json()
    assert [p["id"] for p in page["procedures"]] == [third["id"], wide["id"]] and page["next_cursor"]
    rest = api.get(
        "/v1/procedures", {"project_id": PROJECT, "subject_id": "alice", "cursor": page["next_cursor"]}
    ).json()
    assert [p["id"] for p in rest["procedures"]] == [first["id"]] and rest["next_cursor"] is None
    project = api.get("/v1/procedures", {"project_id": PROJECT}).json()["procedures"]
    assert [p["id"] for p in project] == [wide["id"]] and project[0]["subject_id"] is None
    bad_cursor = api.get("/v1/procedures", {"project_id": PROJECT, "cursor": "nope"})
    assert bad_cursor.status_code == 400 and error_code(bad_cursor) == "invalid_request"


@pytest.mark.parametrize(
    "bad, field",
    [
        ({"title": ""}, "title"),
        ({"title": "t" * 201}, "title"),
        ({"title": "a\tb"}, "title"),
        ({"text": " "}, "text"),
        ({"text": "x" * 8001}, "text"),
        ({"importance": 1.5}, "importance"),
        ({"importance": "high"}, "importance"),
        ({"category": 3}, "category"),
        ({"metadata": "x"}, "metadata"),
        ({"status": "retracted"}, "status"),
    ],
)
def test_bad_procedures_are_refused_and_nothing_is_written(api, bad, field):
    response = api.post("/v1/procedures", {**procedure(), **bad}, format="json")
    assert response.status_code == 400 and error_code(response) == "invalid_request"
    assert field in {e["field"] for e in response.json()["error"]["details"]["errors"]}
    assert not Procedure.objects.exists()


def test_a_procedure_is_edited_in_place_and_embedded_again_for_a_new_text(api):
    body = post_procedure(api)
    before = Procedure.objects.get(id=body["id"]).embedding.to_list()
    same_text = api.patch(f"/v1/procedures/{body['id']}", {"importance": 0.9}, format="json")
    assert same_text.status_code == 200 and same_text.json()["importance"] == 0.9
    assert Procedure.objects.get(id=body["id"]).embedding.to_list() == before
    new_text = api.patch(f"/v1/procedures/{body['id']}", {"text": "Ask Marc to press the button."}, format="json")
    assert new_text.status_code == 200 and new_text.json()["id"] == body["id"]
    stored = Procedure.objects.get(id=body["id"])
    assert stored.embedding.to_list() != before
    assert Procedure.objects.filter(search_vector=SearchQuery("marc", config="simple")).exists()


def test_a_deleted_procedure_is_retracted_and_no_longer_editable(api):
    body = post_procedure(api)
    retracted = api.delete(f"/v1/procedures/{body['id']}")
    assert retracted.status_code == 200 and retracted.json()["status"] == "retracted"
    assert api.delete(f"/v1/procedures/{body['id']}").json()["status"] == "retracted"  # harmless twice
    refused = api.patch(f"/v1/procedures/{body['id']}", {"importance": 0.1}, format="json")
    assert refused.status_code == 409 and error_code(refused) == "procedure_not_active"
    listed = api.get("/v1/procedures", {"project_id": PROJECT, "subject_id": "alice", "status": "active"}).json()
    assert listed["procedures"] == []


def test_procedures_are_scoped_to_the_keys_project(api, other_api):
    body = post_procedure(api)
    assert other_api.post("/v1/procedures", procedure(), format="json").status_code == 404
    for call in (other_api.get, other_api.delete):
        assert call(f"/v1/procedures/{body['id']}").status_code == 404
    assert other_api.patch(f"/v1/procedures/{body['id']}", {"importance": 0.1}, format="json").status_code == 404
    assert other_api.get("/v1/procedures", {"project_id": PROJECT}).status_code == 404
    assert Procedure.objects.get().status == "active"


def test_a_failing_embedder_refuses_a_procedure_and_writes_nothing(api, settings):
    with socket.socket() as sock:  # a local port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings.HAKI_EMBED_PROVIDER = "openai"
    settings.HAKI_EMBED_URL = f"http://127.0.0.1:{port}/v1/embeddings"
    response = api.post("/v1/procedures", procedure(), format="json")
    assert response.status_code == 503 and error_code(response) == "embedder_unavailable"
    assert not Procedure.objects.exists()
