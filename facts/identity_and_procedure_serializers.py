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
from hakimem.serializers import StrictSerializer, response_writer
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


class SubjectOrProjectOutField(serializers.CharField):
    """A block's or a procedure's subject in a response: null for the whole project ('' in its row)."""

    def __init__(self, **kwargs):
        super().__init__(allow_null=True, help_text="null: the whole project", **kwargs)

    @staticmethod
    def write(subject_id: str) -> str | None:
        return subject_id or None


class TokensOutField(serializers.IntegerField):
    """What a text costs in a context call's budget, written from the text (response_writer)."""

    write = staticmethod(estimate_tokens)


class IdentityBlockOutSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    project_id = serializers.CharField()
    subject_id = SubjectOrProjectOutField()
    name = serializers.CharField()
    text = serializers.CharField()
    tokens = TokensOutField(
        source="text", help_text="its cost in the identity tier's budget (about 4 characters a token)"
    )
    position = serializers.IntegerField()
    enabled = serializers.BooleanField()
    metadata = serializers.DictField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


identity_block_out = response_writer(IdentityBlockOutSerializer)


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


class ProcedureOutSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    project_id = serializers.CharField()
    subject_id = SubjectOrProjectOutField()
    title = serializers.CharField()
    text = serializers.CharField()
    status = serializers.ChoiceField(choices=ProcedureStatus.choices)
    category = serializers.CharField(allow_blank=True)
    importance = serializers.FloatField()
    metadata = serializers.DictField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


procedure_out = response_writer(ProcedureOutSerializer)


class ProcedurePageSerializer(serializers.Serializer):
    procedures = ProcedureOutSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)
