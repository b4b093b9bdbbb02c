"""The API's shapes of a project's settings (GET and PATCH /v1/project) and of its subjects' consents."""

from __future__ import annotations

from rest_framework import serializers

from facts.models import CATEGORY_MAX, ConflictPolicy, ConsentWritePolicy
from hakimem.fields import NOT_BLANK, ScopeIdField, StrictBooleanField, StrictCharField
from hakimem.serializers import StrictSerializer, response_writer


PROJECT_CATEGORIES_MAX = 100


class ProjectPatchSerializer(StrictSerializer):
    consent_required = StrictBooleanField(required=False)
    consent_write_policy = serializers.ChoiceField(choices=ConsentWritePolicy.choices, required=False)
    categories = serializers.ListField(
        child=StrictCharField(max_length=CATEGORY_MAX, allow_blank=False, validators=[NOT_BLANK]),
        required=False,
        max_length=PROJECT_CATEGORIES_MAX,
    )
    conflict_policy = serializers.ChoiceField(
        choices=[("", "environment default"), *ConflictPolicy.choices], required=False
    )

    @classmethod
    def schema_rules(cls) -> dict:
        return {"minProperties": 1, "properties": {"categories": {"uniqueItems": True}}}

    def validate_categories(self, value):
        if len(set(value)) != len(value):
            raise serializers.ValidationError("must not repeat a category")
        return value

    def validate(self, attrs):
        if not attrs:
            raise serializers.ValidationError({"non_field_errors": ["send at least one setting to change"]})
        return attrs


class ConsentGrantSerializer(StrictSerializer):
    project_id = ScopeIdField()
    category = StrictCharField(max_length=CATEGORY_MAX, allow_blank=False, validators=[NOT_BLANK])


class ConsentRevokeQuerySerializer(StrictSerializer):
    project_id = ScopeIdField()
    erase = serializers.ChoiceField(choices=["true", "false"], required=False, default="false")


class ProjectOutSerializer(serializers.Serializer):
    project_id = serializers.CharField()
    consent_required = serializers.BooleanField()
    consent_write_policy = serializers.ChoiceField(choices=ConsentWritePolicy.choices)
    categories = serializers.ListField(child=serializers.CharField())
    conflict_policy = serializers.ChoiceField(
        choices=ConflictPolicy.choices, help_text="in effect (the environment's when unset)"
    )


class ConsentOutSerializer(serializers.Serializer):
    category = serializers.CharField()
    granted_at = serializers.DateTimeField()
    granted_by = serializers.CharField()
    revoked_at = serializers.DateTimeField(allow_null=True)
    revoked_by = serializers.CharField(allow_blank=True)


project_out = response_writer(ProjectOutSerializer)  # a ProjectSettings (facts.selectors) or a Project row
consent_out = response_writer(ConsentOutSerializer)


class ConsentsSerializer(serializers.Serializer):
    project_id = serializers.CharField()
    subject_id = serializers.CharField()
    consented = serializers.ListField(child=serializers.CharField(), help_text="the categories consented to now")
    history = ConsentOutSerializer(many=True, help_text="every grant, oldest first, with its revocation if any")


class ConsentRevokedSerializer(serializers.Serializer):
    consent = ConsentOutSerializer(allow_null=True)
    erased = serializers.DictField(
        child=serializers.IntegerField(), allow_null=True, help_text="with erase=true: rows deleted, per table"
    )
