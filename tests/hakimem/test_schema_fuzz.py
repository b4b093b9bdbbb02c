"""The OpenAPI schema at /v1/schema, the docs at /docs, and schemathesis against the app in process (WSGI).

For every operation of the schema, schemathesis generates requests that fit it (positive) and requests that do not
(negative), sends them with a valid key to the real app on the real PostgreSQL, and checks: no 5xx, every status
is one the schema documents, every body matches the documented response (success or the error contract), and
every error is {"error": {"code", "message", "details"}}. Bounded: EXAMPLES per operation and mode (~40 s)."""
from collections import Counter

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
SCHEMA = schemathesis.openapi.from_wsgi("/v1/schema", application)
OPERATIONS = sorted(op.ok().label for op in SCHEMA.get_all_operations())
# Operations that take no input at all have nothing to make invalid: negative mode cannot generate for them.
NO_INPUT = {"GET /v1/health", "GET /v1/health/live", "GET /v1/health/ready"}
CASES = [(label, mode) for label in OPERATIONS for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
         if not (mode == GenerationMode.NEGATIVE and label in NO_INPUT)]
CODES = {c.value for c in ErrorCode}


def test_the_schema_describes_every_api_endpoint_and_the_error_contract(client):
    response = client.get("/v1/schema", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    assert set(schema["paths"]) >= {
        "/v1/facts", "/v1/facts/{fact_id}", "/v1/facts/{fact_id}/history", "/v1/events", "/v1/conflicts",
        "/v1/conflicts/{conflict_id}", "/v1/conflicts/{conflict_id}/resolve", "/v1/subjects/{subject_id}",
        "/v1/context", "/v1/inspect/{trace_id}", "/v1/stats/overview", "/v1/health", "/v1/health/live",
        "/v1/health/ready",
    }
    components = schema["components"]["schemas"]
    code = components[components["Error"]["properties"]["error"]["$ref"].split("/")[-1]]["properties"]["code"]
    assert set(components[code["allOf"][0]["$ref"].split("/")[-1]]["enum"]) == CODES
    post_facts = schema["paths"]["/v1/facts"]["post"]
    assert {"201", "400", "401", "404", "413", "503"} <= set(post_facts["responses"])
    assert post_facts["responses"]["413"]["content"]["application/json"]["schema"]["$ref"].endswith("/Error")
    assert schema["components"]["securitySchemes"]["bearerKey"]["scheme"] == "bearer"


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


def assert_in_contract(response) -> None:
    if response.status_code >= 400:
        body = response.json()
        assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}, body
        assert body["error"]["code"] in CODES, body


@pytest.mark.parametrize("label, mode", CASES)
def test_schemathesis_finds_no_5xx_and_every_answer_in_the_contract(label, mode):
    key = make_client(PROJECT).raw_key
    operation = SCHEMA.find_operation_by_label(label)
    checks = [not_a_server_error, status_code_conformance, content_type_conformance]
    if mode == GenerationMode.POSITIVE:
        checks.append(response_schema_conformance)
    statuses = []

    @given(case=operation.as_strategy(generation_mode=mode))
    @hypothesis_settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
                         suppress_health_check=list(HealthCheck))
    def run(case):
        aim_at_own_project(case)
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
