"""The API's shapes of identity blocks and procedures. subject_id null (or left out) is the project: the block or
procedure applies to every subject of it."""

from __future__ import annotations

from rest_framework import serializers

from facts.models import (
    CATEGORY_MAX,
    IDENTITY_NAME_MAX,
    IDENTITY_TEXT_MAX,
    PROCEDURE_TEXT_MAX,
    PROCEDURE_TITLE_MAX,
    PROJECT_WIDE,
    ProcedureStatus,
)
from facts.serializers import PageQuerySerializer, text_field
from hakimem.fields import (
    ONE_LINE,
    JsonObjectField,
    ScopeIdField,
    StrictBooleanField,
    StrictCharField,
    StrictFloatField,
    StrictIntegerField,
)
from hakimem.serializers import StrictSerializer, iso
from hakimem.tokens import estimate_tokens

POSITION_MAX = 2**31 - 1  # the column's integer range
_SUBJECT_OR_PROJECT_HELP = "null or left out: the whole project (every subject of it)"


def _subject_or_project() -> ScopeIdField:
    return ScopeIdField(required=False, allow_null=True, default=None, help_text=_SUBJECT_OR_PROJECT_HELP)


def _stored_subject(attrs: dict) -> dict:
    if "subject_id" in attrs:
        attrs["subject_id"] = attrs["subject_id"] or PROJECT_WIDE
    return attrs


class _AllOptional:
    """A PATCH body: every field optional, at least one sent."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for f in self.fields.values():
            f.required = False

    @classmethod
    def schema_rules(cls) -> dict:
        return {"minProperties": 1}

    def validate(self, attrs):
        if not attrs:
            raise serializers.ValidationError({"non_field_errors": [f"send at least one of: {', '.join(self.fields)}"]})
        return attrs


class IdentityBlockInSerializer(StrictSerializer):
    project_id = ScopeIdField()
    subject_id = _subject_or_project()
    name = StrictCharField(
        max_length=IDENTITY_NAME_MAX, trim_whitespace=False, validators=[ONE_LINE], help_text="unique in its scope"
    )
    text = text_field(IDENTITY_TEXT_MAX)
    position = StrictIntegerField(
        required=False,
        min_value=0,
        max_value=POSITION_MAX,
        default=0,
        help_text="blocks are served by position, then name",
    )
    enabled = StrictBooleanField(required=False, default=True)
    metadata = JsonObjectField(required=False, default=dict)

    def validate(self, attrs):
        return _stored_subject(attrs)


class IdentityBlockPatchSerializer(_AllOptional, StrictSerializer):
    name = StrictCharField(max_length=IDENTITY_NAME_MAX, trim_whitespace=False, validators=[ONE_LINE])
    text = text_field(IDENTITY_TEXT_MAX)
    position = StrictIntegerField(min_value=0, max_value=POSITION_MAX)
    enabled = StrictBooleanField()
    metadata = JsonObjectField()


class IdentityBlockListQuerySerializer(StrictSerializer):
    project_id = ScopeIdField()
    subject_id = ScopeIdField(
        required=False,
        help_text="left out: the project-wide blocks only; given: those and "
        "the subject's own, in the order a context call serves them",
    )


def identity_block_out(block) -> dict:
    return {
        "id": str(block.id),
        "project_id": block.project_id,
        "subject_id": block.subject_id or None,
        "name": block.name,
        "text": block.text,
        "tokens": estimate_tokens(block.text),
        "position": block.position,
        "enabled": block.enabled,
        "metadata": block.metadata,
        "created_at": iso(block.created_at),
        "updated_at": iso(block.updated_at),
    }


class IdentityBlockOutSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    project_id = serializers.CharField()
    subject_id = serializers.CharField(allow_null=True, help_text="null: the whole project")
    name = serializers.CharField()
    text = serializers.CharField()
    tokens = serializers.IntegerField(help_text="its cost in the identity tier's budget (about 4 characters a token)")
    position = serializers.IntegerField()
    enabled = serializers.BooleanField()
    metadata = serializers.DictField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class IdentityBlockListSerializer(serializers.Serializer):
    identity_blocks = IdentityBlockOutSerializer(many=True)


class ProcedureInSerializer(StrictSerializer):
    project_id = ScopeIdField()
    subject_id = _subject_or_project()
    title = StrictCharField(max_length=PROCEDURE_TITLE_MAX, trim_whitespace=False, validators=[ONE_LINE])
    text = text_field(PROCEDURE_TEXT_MAX)
    category = StrictCharField(max_length=CATEGORY_MAX, required=False, allow_blank=True, default="")
    importance = StrictFloatField(min_value=0.0, max_value=1.0, required=False, default=0.5)
    metadata = JsonObjectField(required=False, default=dict)

    def validate(self, attrs):
        return _stored_subject(attrs)


class ProcedurePatchSerializer(_AllOptional, StrictSerializer):
    title = StrictCharField(max_length=PROCEDURE_TITLE_MAX, trim_whitespace=False, validators=[ONE_LINE])
    text = text_field(PROCEDURE_TEXT_MAX)
    category = StrictCharField(max_length=CATEGORY_MAX, allow_blank=True)
    importance = StrictFloatField(min_value=0.0, max_value=1.0)
    metadata = JsonObjectField()


class ProcedureListQuerySerializer(PageQuerySerializer):
    subject_id = ScopeIdField(
        required=False, help_text="left out: the project-wide procedures only; given: those and the subject's own"
    )
    status = serializers.ChoiceField(choices=ProcedureStatus.choices, required=False)
    category = serializers.CharField(required=False, max_length=CATEGORY_MAX)


def procedure_out(procedure) -> dict:
    return {
        "id": str(procedure.id),
        "project_id": procedure.project_id,
        "subject_id": procedure.subject_id or None,
        "title": procedure.title,
        "text": procedure.text,
        "status": procedure.status,
        "category": procedure.category,
        "importance": procedure.importance,
        "metadata": procedure.metadata,
        "created_at": iso(procedure.created_at),
        "updated_at": iso(procedure.updated_at),
    }


class ProcedureOutSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    project_id = serializers.CharField()
    subject_id = serializers.CharField(allow_null=True, help_text="null: the whole project")
    title = serializers.CharField()
    text = serializers.CharField()
    status = serializers.ChoiceField(choices=ProcedureStatus.choices)
    category = serializers.CharField(allow_blank=True)
    importance = serializers.FloatField()
    metadata = serializers.DictField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class ProcedurePageSerializer(serializers.Serializer):
    procedures = ProcedureOutSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)
