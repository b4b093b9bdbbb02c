"""What every app's API does at its edge: strict input serializers, reading the query string into one, ISO 8601
output, and responses written from the serializers that declare them."""

from __future__ import annotations

from collections.abc import Callable

from rest_framework import serializers


# The OpenAPI schema of a StrictSerializer's body says it refuses unknown fields (additionalProperties false), with
# what else it enforces that its fields cannot show (schema_rules): hakimem.schema.StrictSerializerSchema.
class StrictSerializer(serializers.Serializer):
    """Refuses fields it does not know: a typo ('categroy') is an error, not silently ignored."""

    @classmethod
    def schema_rules(cls) -> dict:
        """JSON Schema keywords this serializer enforces beyond its fields' own, merged into its request schema:
        {"minProperties": 1}, {"properties": {"categories": {"uniqueItems": True}}}."""
        return {}

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            raise serializers.ValidationError({"non_field_errors": ["must be a JSON object"]})
        unknown = sorted(set(data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError({name: ["unknown field"] for name in unknown})
        return super().to_internal_value(data)


def validated(serializer_class, data):
    """The serializer's validated data; a ValidationError (400 invalid_request) otherwise."""
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


def query_params(request) -> dict:
    """The query string as one value per name (the last one given), the shape a serializer reads."""
    return {k: v for k, v in request.query_params.items()}


def iso(value):
    """ISO 8601 in UTC with a Z, the way every response writes a moment; None stays None."""
    return value.isoformat().replace("+00:00", "Z") if value else None


def _id_text(value):
    return str(value) if value else None


def response_writer(serializer_class, *, rows: bool = False) -> Callable[[object], dict]:
    """The response body `serializer_class` declares (the class the OpenAPI schema describes), written from an object
    at a dict literal's cost: a DRF serializer's to_representation takes about ten times longer a row. Each
    field is read from its source attribute and written as is, except a moment (iso), an id (a string, None
    kept), a list (a list) and a field that says how it is written (its `write`). So each shape is declared
    once. rows: the objects are dicts (a selector's rows), read by key."""
    steps = []
    for name, field in serializer_class().fields.items():
        if hasattr(field, "write"):
            write = field.write
        elif isinstance(field, serializers.DateTimeField):
            write = iso
        elif isinstance(field, serializers.UUIDField):
            write = _id_text
        elif isinstance(field, serializers.ListField):
            write = list
        else:
            write = None
        steps.append((name, field.source, write))

    def written(obj) -> dict:
        out = {}
        for name, source, write in steps:
            value = obj if source == "*" else obj[source] if rows else getattr(obj, source)  # "*": the whole object
            out[name] = write(value) if write else value
        return out

    return written
