"""The Python client and the OpenAPI schema cannot drift apart: every request the client can send is an
operation of /v1/schema, every field of its answer models is a property of the schema's response, and the other
way round; an endpoint the client does not offer yet is named here, so adding one to the API without the
client fails this test."""

import dataclasses
import re

import pytest
from hakimem_client import models
from hakimem_client.endpoints import _Endpoints
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db

AN_ID = "00000000-0000-0000-0000-000000000001"

# Operations of the API that the client does not offer (yet): the operator's and the product owner's ones.
NOT_IN_CLIENT = {
    ("GET", "/v1/health/live"),
    ("GET", "/v1/health/ready"),
    ("GET", "/v1/stats/overview"),
    ("GET", "/v1/project"),
    ("PATCH", "/v1/project"),
    ("GET", "/v1/subjects/{subject_id}/consents"),
    ("POST", "/v1/subjects/{subject_id}/consents"),
    ("DELETE", "/v1/subjects/{subject_id}/consents/{category}"),
    ("GET", "/v1/jobs/{job_id}"),  # write_facts sends batches light enough to be answered in their request
}

# Client model -> the schema's response component, and the model's fields that are not the server's.
MODELS = [
    (models.Fact, "FactWritten", {"raw"}),
    (models.Event, "EventOut", {"raw"}),
    (models.ConflictSet, "ConflictDetail", {"raw"}),
    (models.ConflictMember, "ConflictMemberOut", {"raw"}),
    (models.ContextPacket, "ContextPacket", {"raw"}),
    (models.PacketFact, "PacketFact", {"raw"}),
    (models.PacketEpisode, "PacketEpisode", {"raw"}),
    (models.PacketIdentity, "PacketIdentity", set()),
    (models.PacketProcedure, "PacketProcedure", set()),
    (models.Trace, "Inspection", {"raw"}),
    (models.Replay, "Replay", {"raw"}),
    (models.IdentityBlock, "IdentityBlockOut", {"raw"}),
    (models.Procedure, "ProcedureOut", {"raw"}),
]


@pytest.fixture(scope="module")
def schema(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        response = APIClient().get("/v1/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    return response.json()


def _requests_the_client_sends() -> set[tuple[str, str]]:
    endpoints = _Endpoints(project_id="p")
    calls = [
        endpoints.write_facts([{"subject_id": "s", "text": "t"}], None),
        endpoints.list_facts("s", None),
        endpoints.get_fact(AN_ID),
        endpoints.update_fact(AN_ID, {"importance": 0.5}),
        endpoints.retract_fact(AN_ID),
        endpoints.fact_history(AN_ID),
        endpoints.write_events([{"subject_id": "s", "text": "t", "occurred_at": None}], None),
        endpoints.list_events("s", None),
        endpoints.get_event(AN_ID),
        endpoints.context("s", "q", None, None, {}),
        endpoints.inspect(AN_ID),
        endpoints.replay(AN_ID, "original", {"w_recency": 0.1}),
        endpoints.list_conflicts(None),
        endpoints.get_conflict(AN_ID),
        endpoints.resolve_conflict(AN_ID, None, True, ""),
        endpoints.erase_subject("s", None),
        endpoints.health(),
        endpoints.create_identity_block("s", "persona", "t", None),
        endpoints.list_identity_blocks(None, None),
        endpoints.get_identity_block(AN_ID),
        endpoints.update_identity_block(AN_ID, {"enabled": False}),
        endpoints.delete_identity_block(AN_ID),
        endpoints.write_procedure(None, "title", "t", None),
        endpoints.list_procedures("s", None),
        endpoints.get_procedure(AN_ID),
        endpoints.update_procedure(AN_ID, {"importance": 0.1}),
        endpoints.retract_procedure(AN_ID),
    ]
    public = {name for name in vars(_Endpoints) if not name.startswith("_")}
    assert len(calls) == len(public), "a method of _Endpoints is not exercised here: add it"
    return {(call.method, call.path) for call in calls}


def _operation(schema: dict, method: str, path: str) -> str | None:
    for template, operations in schema["paths"].items():
        if method.lower() in operations and re.fullmatch(re.sub(r"\{[^}]+\}", "[^/]+", template), path):
            return template
    return None


def test_every_request_of_the_client_is_an_operation_of_the_schema(schema):
    sent = _requests_the_client_sends()
    unknown = sorted((m, p) for m, p in sent if _operation(schema, m, p) is None)
    assert not unknown, unknown


def test_every_operation_of_the_schema_is_in_the_client_or_named_as_not_yet(schema):
    covered = {(m, _operation(schema, m, p)) for m, p in _requests_the_client_sends()}
    operations = {
        (m.upper(), p) for p, ops in schema["paths"].items() for m in ops if m in {"get", "post", "patch", "delete"}
    }
    assert operations - covered == NOT_IN_CLIENT


@pytest.mark.parametrize("model, component, own", MODELS, ids=[m.__name__ for m, _, _ in MODELS])
def test_the_clients_models_have_the_schemas_fields(schema, model, component, own):
    properties = set(schema["components"]["schemas"][component]["properties"])
    fields = {f.name for f in dataclasses.fields(model)} - own
    assert fields == properties
