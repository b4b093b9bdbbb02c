"""The OpenAPI 3 description of /v1/ (drf-spectacular), served at /v1/schema, browsable at /docs.

The views validate with the apps' strict serializers and answer plain dicts; what the schema cannot infer from
them (the error contract, the response shapes, the custom fields) is declared here and next to each view."""

from __future__ import annotations

from html import escape

from drf_spectacular.extensions import (
    OpenApiAuthenticationExtension,
    OpenApiSerializerExtension,
    OpenApiSerializerFieldExtension,
)
from drf_spectacular.renderers import OpenApiYamlRenderer
from drf_spectacular.utils import OpenApiResponse
from drf_spectacular.views import SpectacularAPIView
from rest_framework import serializers

from hakimem.errors import ErrorCode


class ErrorDetailSerializer(serializers.Serializer):
    code = serializers.ChoiceField(choices=[c.value for c in ErrorCode], help_text="hakimem.errors.ErrorCode")
    message = serializers.CharField()
    details = serializers.DictField(help_text="invalid_request: {errors: [{index, field, message}]}; others vary")


class ErrorSerializer(serializers.Serializer):
    """{"error": {"code", "message", "details"}}: every error any /v1/ endpoint answers."""

    error = ErrorDetailSerializer()


_MEANING = {
    400: "invalid_request: the body or the query is invalid (details.errors lists {index, field, message})",
    401: "unauthenticated: no key, or an unknown or revoked one",
    403: "permission_denied / consent_missing (a category the subject has not consented to)",
    404: "not_found: nothing with this id in the key's project (another project's scope answers the same)",
    405: "method_not_allowed",
    409: "conflict_not_open / fact_not_active / procedure_not_active",
    413: "payload_too_large: the body is larger than HAKI_MAX_BODY_BYTES",
    415: "unsupported_media_type: send application/json",
    503: "database_unavailable or embedder_unavailable: nothing was written; retry later",
}


def errors(*statuses: int) -> dict[int, OpenApiResponse]:
    """The error responses of an endpoint, each in the contract. 401, 405 and 503 apply to every keyed endpoint."""
    return {
        s: OpenApiResponse(ErrorSerializer, description=_MEANING[s]) for s in sorted(set(statuses) | {401, 405, 503})
    }


class ApiKeyScheme(OpenApiAuthenticationExtension):
    target_class = "hakimem.auth.ApiKeyAuthentication"
    name = "bearerKey"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "an API key (manage.py create_api_key)"}


class ScopeIdFieldSchema(OpenApiSerializerFieldExtension):
    target_class = "hakimem.fields.ScopeIdField"

    def map_serializer_field(self, auto_schema, direction):
        from hakimem.validators import SCOPE_ID_MAX

        return {"type": "string", "pattern": rf"^[A-Za-z0-9._:@-]{{1,{SCOPE_ID_MAX}}}$", "maxLength": SCOPE_ID_MAX}


class JsonObjectFieldSchema(OpenApiSerializerFieldExtension):
    target_class = "hakimem.fields.JsonObjectField"

    def map_serializer_field(self, auto_schema, direction):
        from hakimem.fields import METADATA_MAX_BYTES, METADATA_MAX_DEPTH

        return {
            "type": "object",
            "additionalProperties": True,
            "description": f"free-form JSON object: at most {METADATA_MAX_DEPTH} levels deep and {METADATA_MAX_BYTES} "
            "bytes as compact JSON; no U+0000 or unpaired surrogate; integers within a bigint "
            "(-(2^63 - 1) to 2^63 - 1, as every JSON number the API reads)",
        }


class StrictSerializerSchema(OpenApiSerializerExtension):
    """A request body a StrictSerializer reads: no property beyond its fields (the API refuses unknown fields), and the
    rules it enforces beyond them (StrictSerializer.schema_rules), so that a body the schema allows is one the API
    takes, short of what the store holds (a name already taken, an id unknown)."""

    target_class = "hakimem.serializers.StrictSerializer"
    match_subclasses = True

    def map_serializer(self, auto_schema, direction):
        schema = auto_schema._map_serializer(self.target, direction, bypass_extensions=True)
        if direction == "request":
            schema["additionalProperties"] = False
            _merge(schema, self.target.schema_rules())
        return schema


def _merge(schema: dict, rules: dict) -> None:
    for key, value in rules.items():
        if isinstance(value, dict) and isinstance(schema.get(key), dict):
            _merge(schema[key], value)
        else:
            schema[key] = value


def request_bodies_required(result, generator, request, public):
    """A drf-spectacular postprocessing hook: a request body whose schema needs a property (a required one, or
    minProperties, in each of its alternatives) is required, as the API refuses a request without one. drf-spectacular
    leaves a PATCH body and a one-or-batch body optional."""
    schemas = result.get("components", {}).get("schemas", {})

    def resolve(schema: dict) -> dict:
        while "$ref" in schema:
            schema = schemas[schema["$ref"].split("/")[-1]]
        return schema

    def needs_property(schema: dict) -> bool:
        schema = resolve(schema)
        alternatives = schema.get("oneOf") or schema.get("anyOf")
        if alternatives:
            return all(needs_property(s) for s in alternatives)
        return bool(schema.get("required")) or schema.get("minProperties", 0) > 0

    for operation in _operations(result):
        body = operation.get("requestBody")
        if body and any(needs_property(media["schema"]) for media in body.get("content", {}).values()):
            body["required"] = True
    return result


def malformed_ids_answer_400(result, generator, request, public):
    """A postprocessing hook: an operation with an id in its path answers 400 for a malformed one
    (hakimem.validators.IdConverter), which no view declares itself."""
    for operation in _operations(result):
        ids = [
            p for p in operation.get("parameters", []) if p.get("in") == "path" and p["schema"].get("format") == "uuid"
        ]
        if ids and "400" not in operation.get("responses", {}):
            content = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
            operation["responses"]["400"] = {
                "description": "invalid_request: an id in the path is not a UUID",
                "content": content,
            }
    return result


def _operations(result):
    """Every operation of the schema (a path item also holds non-operation keys, such as its parameters)."""
    for path in result.get("paths", {}).values():
        for operation in path.values():
            if isinstance(operation, dict):
                yield operation


class SchemaPageRenderer(OpenApiYamlRenderer):
    """The schema as a page a browser shows (its YAML, escaped, in <pre>): a browser asks for text/html, and the
    OpenAPI media types would make it download a file instead."""

    media_type = "text/html"
    format = "html"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        text = super().render(data, accepted_media_type, renderer_context).decode()
        return (
            f'<!doctype html><meta charset="utf-8"><title>hakimem API schema</title>'
            f'<p>The OpenAPI 3 schema of hakimem\'s API; <a href="../docs">browse it</a> or '
            f'<a href="?format=json">get it as JSON</a>.</p><pre>{escape(text)}</pre>'
        ).encode()


class SchemaView(SpectacularAPIView):
    """/v1/schema: OpenAPI YAML or JSON by content negotiation (or ?format=json), a readable page for a browser."""

    renderer_classes = [*SpectacularAPIView.renderer_classes, SchemaPageRenderer]
