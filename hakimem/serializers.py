"""What every app's API does at its edge: strict input serializers, reading the query string into one, and
ISO 8601 output."""

from __future__ import annotations

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
