"""The OpenAPI schema at /v1/schema, the docs at /docs, and schemathesis against the app in process (WSGI).

For every operation of the schema, schemathesis generates requests that fit it (positive) and requests that do not
(negative), sends them with a valid key to the real app on the real PostgreSQL, and checks: no 5xx, every status
is one the schema documents with the content type it documents, every body matches the documented response
(success or the error contract), every request that does not fit is refused and every one that fits is taken (the
schema states every rule the API enforces: schemathesis' conformance checks), and every error is
{"error": {"code", "message", "details"}}. Bounded: EXAMPLES per operation and mode (70 runs, ~80 s)."""

import uuid
from collections import Counter
from datetime import datetime

import jsonschema
import jsonschema_rs
import pytest
import schemathesis
from django.conf import settings as django_settings
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from schemathesis.checks import not_a_server_error
from schemathesis.generation.modes import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    positive_data_acceptance,
    response_schema_conformance,
    status_code_conformance,
)

from hakimem.errors import ErrorCode
from hakimem.validators import is_scope_id
from config.wsgi import application
from tests.conftest import PROJECT, make_client

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def in_the_test_transaction():
    """Requests go through the WSGI application, whose request_started/finished signals close the database
    connection (close_old_connections); inside the test's transaction that would close it under the test. Django's
    own test client disconnects them the same way."""
    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    yield
    for signal in (request_started, request_finished):
        signal.connect(close_old_connections)


EXAMPLES = 12
BIGINT_MAX = 2**63 - 1
SCHEMA = schemathesis.openapi.from_wsgi("/v1/schema", application)
# No U+0000 in generated strings: the API stores none (each text field and metadata says so in its description), a
# rule OpenAPI 3.0 cannot state for a free-form object's keys and values. tests/hakimem/test_bad_input.py sends them.
SCHEMA.config.generation.update(allow_x00=False)
OPERATIONS = sorted(op.ok().label for op in SCHEMA.get_all_operations())
# Operations that take no input at all have nothing to make invalid: negative mode cannot generate for them.
NO_INPUT = {"GET /v1/health", "GET /v1/health/live", "GET /v1/health/ready"}
CASES = [
    (label, mode)
    for label in OPERATIONS
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
    if not (mode == GenerationMode.NEGATIVE and label in NO_INPUT)
]
CODES = {c.value for c in ErrorCode}


def test_the_schema_describes_every_api_endpoint_and_the_error_contract(client):
    response = client.get("/v1/schema", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    assert set(schema["paths"]) >= {
        "/v1/facts",
        "/v1/facts/{fact_id}",
        "/v1/facts/{fact_id}/history",
        "/v1/events",
        "/v1/conflicts",
        "/v1/conflicts/{conflict_id}",
        "/v1/conflicts/{conflict_id}/resolve",
        "/v1/subjects/{subject_id}",
        "/v1/context",
        "/v1/inspect/{trace_id}",
        "/v1/stats/overview",
        "/v1/health",
        "/v1/health/live",
        "/v1/health/ready",
    }
    components = schema["components"]["schemas"]
    code = components[components["Error"]["properties"]["error"]["$ref"].split("/")[-1]]["properties"]["code"]
    assert set(components[code["allOf"][0]["$ref"].split("/")[-1]]["enum"]) == CODES
    post_facts = schema["paths"]["/v1/facts"]["post"]
    assert {"201", "400", "401", "404", "413", "503"} <= set(post_facts["responses"])
    assert post_facts["responses"]["413"]["content"]["application/json"]["schema"]["$ref"].endswith("/Error")
    assert schema["components"]["securitySchemes"]["bearerKey"]["scheme"] == "bearer"


def test_the_schema_states_the_rules_the_api_enforces(client, settings):
    # given the schema a client reads
    schema = client.get("/v1/schema", HTTP_ACCEPT="application/json").json()
    components = schema["components"]["schemas"]
    bodies = {
        f"{method.upper()} {path}": operation["requestBody"]
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
        if "requestBody" in operation
    }
    # then every body refuses unknown fields, as the API does (one fact or a batch: each alternative)
    requests = [
        name
        for name, c in components.items()
        if name.endswith("Request") and not all("$ref" in s for s in c.get("oneOf", [{}]))
    ]
    assert len(requests) == 16 and all(components[name]["additionalProperties"] is False for name in requests)
    # a PATCH body must hold a field, and be sent
    for name in (
        "PatchedFactPatchRequest",
        "PatchedProjectPatchRequest",
        "PatchedIdentityBlockPatchRequest",
        "PatchedProcedurePatchRequest",
    ):
        assert components[name]["minProperties"] == 1, name
    assert all(body.get("required") for label, body in bodies.items() if label.startswith("PATCH"))
    # a project's categories are unique and none is blank; a batch holds 1 to 500 items
    categories = components["PatchedProjectPatchRequest"]["properties"]["categories"]
    assert categories["uniqueItems"] is True
    # blank means to a client's validator (an ECMA 262 regex) what it means to the API: str.isspace
    not_blank = jsonschema_rs.validator_for({"type": "string", "pattern": categories["items"]["pattern"]})
    assert [hex(c) for c in range(0x3001) if not_blank.is_valid(chr(c)) == chr(c).isspace()] == []
    assert not_blank.is_valid("\ufeff") and not not_blank.is_valid("\x85\x1c")
    assert (
        components["FactBatchInRequest"]["properties"]["facts"] | {"minItems": 1, "maxItems": 500}
        == components["FactBatchInRequest"]["properties"]["facts"]
    )
    assert components["EventBatchInRequest"]["properties"]["events"]["minItems"] == 1
    # tier budgets need tiers, and a budget its cap
    context = components["ContextRequestSchemaRequest"]
    assert context["not"] == {"required": ["tiers", "tier_budgets"], "properties": {"tiers": {"enum": [False]}}}
    assert context["properties"]["budget_tokens"]["maximum"] == settings.HAKI_MAX_BUDGET_TOKENS
    assert components["TierBudgetsRequest"]["properties"]["facts"]["maximum"] == settings.HAKI_MAX_BUDGET_TOKENS
    # a conflict is resolved by keeping facts or dismissing it, not both, as the API reads the body
    resolve = jsonschema.Draft4Validator(components["ConflictResolveRequest"])
    kept = str(uuid.uuid4())
    assert resolve.is_valid({"dismiss": True}) and resolve.is_valid({"keep": [kept]})
    assert resolve.is_valid({"keep": [kept], "dismiss": False})
    assert not resolve.is_valid({"dismiss": False}) and not resolve.is_valid({"keep": [kept], "dismiss": True})
    # a stats period spans at most 366 days
    period = {p["name"]: p for p in schema["paths"]["/v1/stats/overview"]["get"]["parameters"]}
    assert "at most 366 days" in period["since"]["description"] and "at most 366 days" in period["until"]["description"]


def test_the_docs_page_uses_locally_served_assets(client):
    response = client.get("/docs")
    assert response.status_code == 200
    page = response.content.decode()
    assert "swagger-ui" in page and "cdn" not in page.lower() and "https://" not in page.split("<body")[1]
    assert f"/{django_settings.STATIC_URL.strip('/')}/drf_spectacular_sidecar/swagger-ui-dist/" in page
    # its start-up script, a file of its own (the Content-Security-Policy refuses an inline one), reads /v1/schema
    assert '<script src="/docs?script="></script>' in page
    script = client.get("/docs?script=").content.decode()
    assert "/v1/schema" in script and "cdn" not in script.lower()


def aim_at_own_project(case) -> None:
    """A well-formed project id is replaced by the key's: otherwise nearly every generated request would stop at
    the scope check (404), never reaching validation deeper in. Malformed ids stay, to be refused."""

    def fix(obj):
        if isinstance(obj, dict) and is_scope_id(obj.get("project_id")):
            obj["project_id"] = PROJECT

    fix(case.query)
    fix(case.body)
    if isinstance(case.body, dict):
        for key in ("facts", "events"):
            if isinstance(case.body.get(key), list):
                for item in case.body[key]:
                    fix(item)


def within_the_stores_rules(case, label: str, number: int) -> None:
    """What a schema-valid request may still be refused for, as the schema says in words and no JSON Schema keyword
    can: a cursor is one the API issued (a page's next_cursor), a stats period lies within 366 days of one order
    (two query parameters), a fact's valid_to is not before its valid_from (two properties), its source event and an
    identity block's name are one the scope holds and one it does not (the store's state), and a metadata
    object's integers fit a bigint (free-form: OpenAPI 3.0 tells no integer from a float there). A valid request is
    given each, so that a refusal left is the schema's omission."""
    case.body = _bigints(case.body)
    if label == "POST /v1/facts" and isinstance(case.body, dict):
        for fact in case.body.get("facts", [case.body]):
            _in_order(fact, "valid_from", "valid_to")
            if isinstance(fact, dict):
                fact.pop("source_event_id", None)
    if isinstance(case.query, dict):
        case.query.pop("cursor", None)
        if label == "GET /v1/stats/overview":
            case.query.update(since="2026-01-01T00:00:00Z", until="2026-12-31T00:00:00Z")
    if label == "POST /v1/identity-blocks" and isinstance(case.body, dict) and "name" in case.body:
        case.body["name"] = f"block {number}"


def _in_order(item, first: str, then: str) -> None:
    if isinstance(item, dict) and isinstance(item.get(first), str) and isinstance(item.get(then), str):
        if datetime.fromisoformat(item[first]) > datetime.fromisoformat(item[then]):
            item[first], item[then] = item[then], item[first]


def _bigints(value):
    if isinstance(value, dict):
        return {k: _bigints(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_bigints(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return max(-BIGINT_MAX, min(value, BIGINT_MAX))
    return value


def assert_in_contract(response) -> None:
    if response.status_code >= 400:
        body = response.json()
        assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}, body
        assert body["error"]["code"] in CODES, body


@pytest.mark.parametrize("label, mode", CASES)
def test_schemathesis_finds_no_5xx_and_every_answer_in_the_contract(label, mode):
    key = make_client(PROJECT).raw_key
    operation = SCHEMA.find_operation_by_label(label)
    checks = [
        not_a_server_error,
        status_code_conformance,
        content_type_conformance,
        response_schema_conformance,
        negative_data_rejection,
        positive_data_acceptance,
    ]
    statuses = []

    @given(case=operation.as_strategy(generation_mode=mode))
    @hypothesis_settings(
        max_examples=EXAMPLES, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck)
    )
    def run(case):
        aim_at_own_project(case)
        if mode == GenerationMode.POSITIVE:
            within_the_stores_rules(case, label, len(statuses))
        response = case.call(headers={"Authorization": f"Bearer {key}"})
        case.validate_response(response, checks=checks)
        assert_in_contract(response)
        statuses.append(response.status_code)

    run()
    assert statuses and max(statuses) < 500
    print(f"{label} {mode.value}: {len(statuses)} requests, statuses {dict(sorted(Counter(statuses).items()))}")


def test_the_schema_is_served_as_json_on_request(client):
    response = client.get("/v1/schema?format=json")
    assert response.status_code == 200 and response.json()["info"]["title"] == "hakimem"


def test_a_browser_is_shown_the_schema_not_handed_a_file(client):
    # a browser's Accept header: text/html first, anything last
    response = client.get("/v1/schema", HTTP_ACCEPT="text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")
    page = response.content.decode()
    assert response.status_code == 200 and response["Content-Type"].startswith("text/html")
    assert "<pre>openapi: 3" in page and "/v1/context:" in page and "<script" not in page
    # while a client that asks for anything still gets the YAML document
    plain = client.get("/v1/schema", HTTP_ACCEPT="*/*")
    assert plain["Content-Type"].startswith("application/vnd.oai.openapi") and plain.content.startswith(b"openapi: 3")
