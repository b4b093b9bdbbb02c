"""The API's shapes of facts, events and conflict sets, and what every shape of the store shares (text_field, pages,
scope queries). A project's settings and consents: facts/project_serializers.py; identity blocks and procedures:
facts/identity_and_procedure_serializers.py."""

from __future__ import annotations

from rest_framework import serializers

from facts.models import (
    CATEGORY_MAX,
    CONFLICT_NOTE_MAX,
    EVENT_TEXT_MAX,
    FACT_TEXT_MAX,
    ConflictStatus,
    FactKind,
    FactStatus,
    Volatility,
)
from hakimem.fields import (
    AwareDateTimeField,
    NOT_BLANK,
    JsonObjectField,
    ScopeIdField,
    StrictCharField,
    StrictFloatField,
)
from hakimem.serializers import StrictSerializer, response_writer


def text_field(limit: int):
    return StrictCharField(max_length=limit, trim_whitespace=False, allow_blank=False, validators=[NOT_BLANK])


class FactInSerializer(StrictSerializer):
    project_id = ScopeIdField()
    subject_id = ScopeIdField()
    text = text_field(FACT_TEXT_MAX)
    category = StrictCharField(max_length=CATEGORY_MAX, required=False, allow_blank=True, default="")
    kind = serializers.ChoiceField(choices=FactKind.choices, required=False, default=FactKind.FACT)
    importance = StrictFloatField(min_value=0.0, max_value=1.0, required=False, default=0.5)
    volatility = serializers.ChoiceField(choices=Volatility.choices, required=False, default=Volatility.PERMANENT)
    valid_from = AwareDateTimeField(required=False, allow_null=True, default=None)
    valid_to = AwareDateTimeField(required=False, allow_null=True, default=None, help_text="not before valid_from")
    source_event_id = serializers.UUIDField(required=False, allow_null=True, default=None)
    metadata = JsonObjectField(required=False, default=dict)

    def validate(self, attrs):
        if attrs.get("valid_from") and attrs.get("valid_to") and attrs["valid_from"] > attrs["valid_to"]:
            raise serializers.ValidationError({"valid_to": ["must not be before valid_from"]})
        return attrs


class FactPatchSerializer(StrictSerializer):
    text = text_field(FACT_TEXT_MAX)
    category = StrictCharField(max_length=CATEGORY_MAX, allow_blank=True)
    importance = StrictFloatField(min_value=0.0, max_value=1.0)
    volatility = serializers.ChoiceField(choices=Volatility.choices)
    valid_to = AwareDateTimeField(allow_null=True)
    metadata = JsonObjectField()

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for f in self.fields.values():
            f.required = False

    @classmethod
    def schema_rules(cls) -> dict:
        return {"minProperties": 1}

    def validate(self, attrs):
        if not attrs:
            raise serializers.ValidationError(
                {
                    "non_field_errors": [
                        "send at least one of: text, category, importance, volatility, valid_to, metadata"
                    ]
                }
            )
        return attrs


class EventInSerializer(StrictSerializer):
    project_id = ScopeIdField()
    subject_id = ScopeIdField()
    text = text_field(EVENT_TEXT_MAX)
    occurred_at = AwareDateTimeField()
    metadata = JsonObjectField(required=False, default=dict)


class PageQuerySerializer(StrictSerializer):
    """A scope's list, one keyset page at a time: the cursor the previous page returned, and how many rows."""

    project_id = ScopeIdField()
    subject_id = ScopeIdField()
    cursor = serializers.CharField(required=False, max_length=500)
    limit = serializers.IntegerField(required=False, min_value=1, max_value=200, default=50)


class FactListQuerySerializer(PageQuerySerializer):
    status = serializers.ChoiceField(choices=FactStatus.choices, required=False)
    category = serializers.CharField(required=False, max_length=CATEGORY_MAX)
    kind = serializers.ChoiceField(choices=FactKind.choices, required=False)
    recorded_after = AwareDateTimeField(required=False)
    recorded_before = AwareDateTimeField(required=False)


class EventListQuerySerializer(PageQuerySerializer):
    occurred_after = AwareDateTimeField(required=False)
    occurred_before = AwareDateTimeField(required=False)


class ConflictListQuerySerializer(PageQuerySerializer):
    subject_id = ScopeIdField(required=False)  # a project's whole queue, or one subject's
    status = serializers.ChoiceField(choices=ConflictStatus.choices, required=False)


class ConflictResolveSerializer(StrictSerializer):
    keep = serializers.ListField(child=serializers.UUIDField(), required=False, min_length=1, max_length=100)
    dismiss = serializers.BooleanField(required=False, default=False)
    note = StrictCharField(required=False, allow_blank=True, max_length=CONFLICT_NOTE_MAX, default="")

    @classmethod
    def schema_rules(cls) -> dict:
        # "not" around each value: drf-spectacular's enum hook gives every property enum one component by name,
        # and two one-value enums of the same field would share it
        return {
            "oneOf": [
                {"required": ["keep"], "properties": {"dismiss": {"not": {"enum": [True]}}}},
                {
                    "required": ["dismiss"],
                    "properties": {"dismiss": {"not": {"enum": [False]}}},
                    "not": {"required": ["keep"]},
                },
            ]
        }

    def validate(self, attrs):
        if bool(attrs.get("keep")) == bool(attrs.get("dismiss")):
            raise serializers.ValidationError(
                {"non_field_errors": ['send either "keep": [fact ids] or "dismiss": true']}
            )
        return attrs


class ScopeQuerySerializer(StrictSerializer):
    project_id = ScopeIdField()


# --- the responses, as the OpenAPI schema describes them (response_writer writes each from its declaration) -


class FactOutSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    project_id = serializers.CharField()
    subject_id = serializers.CharField()
    text = serializers.CharField()
    status = serializers.ChoiceField(choices=FactStatus.choices)
    category = serializers.CharField(allow_blank=True)
    kind = serializers.ChoiceField(choices=FactKind.choices)
    importance = serializers.FloatField()
    volatility = serializers.ChoiceField(choices=Volatility.choices)
    valid_from = serializers.DateTimeField(allow_null=True)
    valid_to = serializers.DateTimeField(allow_null=True)
    recorded_from = serializers.DateTimeField()
    recorded_to = serializers.DateTimeField(allow_null=True)
    last_confirmed_at = serializers.DateTimeField()
    superseded_by = serializers.UUIDField(allow_null=True, source="superseded_by_id")
    source_event_id = serializers.UUIDField(allow_null=True)
    metadata = serializers.DictField()


class FactWrittenSerializer(FactOutSerializer):
    deduplicated = serializers.BooleanField(
        help_text="an active fact of the scope already said this: it answers, re-confirmed"
    )
    conflict_set_id = serializers.UUIDField(allow_null=True, help_text="the open conflict set the fact joined, if any")


_fact_out = response_writer(FactOutSerializer)


def fact_out(fact, *, deduplicated=None, conflict_set_id=None, with_write_flags=False) -> dict:
    out = _fact_out(fact)
    if with_write_flags:  # FactWrittenSerializer's two fields, which the fact does not hold
        out["deduplicated"] = bool(deduplicated)
        out["conflict_set_id"] = str(conflict_set_id) if conflict_set_id else None
    return out


def _batch_rules(plural: str) -> dict:
    from facts.writes import MAX_BATCH  # facts.apis.validate_batch enforces it

    return {"properties": {plural: {"minItems": 1, "maxItems": MAX_BATCH}}}


class FactBatchInSerializer(StrictSerializer):
    facts = FactInSerializer(many=True, help_text="1 to 500 facts, all-or-nothing")

    @classmethod
    def schema_rules(cls) -> dict:
        return _batch_rules("facts")


class FactBatchOutSerializer(serializers.Serializer):
    facts = FactWrittenSerializer(many=True)


class FactPageSerializer(serializers.Serializer):
    facts = FactOutSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class FactHistorySerializer(serializers.Serializer):
    versions = FactOutSerializer(many=True)


class BlankAsNullOutField(serializers.CharField):
    """A text that a response writes as null when the row holds ''."""

    @staticmethod
    def write(value: str) -> str | None:
        return value or None


# An event's extraction, from its extraction_* columns; null when extraction was off as it was written. (A comment,
# not a docstring: the schema would show a docstring as the component's description.)
class EventExtractionSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["pending", "done", "failed", "skipped"], source="extraction_status")
    attempts = serializers.IntegerField(help_text="Calls made to the extractor", source="extraction_attempts")
    error = BlankAsNullOutField(
        allow_null=True,
        source="extraction_error",
        help_text="timeout, transport_error, http_error, invalid_output, "
        "write_failed, enqueue_failed, extractor_off, no_consent",
    )
    fact_ids = serializers.ListField(
        child=serializers.UUIDField(), source="extraction_fact_ids", help_text="The facts it wrote or re-confirmed"
    )

    def write(self, event) -> dict | None:
        return _event_extraction_out(event) if event.extraction_status else None


_event_extraction_out = response_writer(EventExtractionSerializer)


class EventOutSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    project_id = serializers.CharField()
    subject_id = serializers.CharField()
    text = serializers.CharField()
    occurred_at = serializers.DateTimeField()
    recorded_at = serializers.DateTimeField()
    metadata = serializers.DictField()
    extraction = EventExtractionSerializer(
        allow_null=True,
        source="*",
        help_text="Fact extraction from this event; null when it was off as the event was written",
    )


event_out = response_writer(EventOutSerializer)


class EventBatchInSerializer(StrictSerializer):
    events = EventInSerializer(many=True, help_text="1 to 500 events, all-or-nothing")

    @classmethod
    def schema_rules(cls) -> dict:
        return _batch_rules("events")


class EventBatchOutSerializer(serializers.Serializer):
    events = EventOutSerializer(many=True)


class EventPageSerializer(serializers.Serializer):
    events = EventOutSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class RoundedOutField(serializers.FloatField):
    """A similarity as a response writes it: 4 decimals."""

    @staticmethod
    def write(value: float) -> float:
        return round(value, 4)


class ConflictReadingSerializer(serializers.Serializer):
    attribute = serializers.CharField(
        help_text="e.g. residence, employer, age, birth, partner, count:children, likes:jazz"
    )
    holder = serializers.CharField(
        help_text="whom the facts are about, as read: a name, self, or a relation (bob/daughter)"
    )
    values = serializers.ListField(child=serializers.CharField(), min_length=2, max_length=2)

    @staticmethod
    def write(reading: dict) -> dict | None:
        return reading or None  # a word rule's set reads nothing: {} in its row


class ConflictOutSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    project_id = serializers.CharField()
    subject_id = serializers.CharField()
    status = serializers.ChoiceField(choices=ConflictStatus.choices)
    signal = serializers.CharField()
    signal_detail = serializers.CharField(allow_blank=True)
    reading = ConflictReadingSerializer(
        allow_null=True,
        help_text=(
            "What was read as contradicting when a claims rule opened the set (different_value, reversed): the "
            "attribute, whose it is, and the two values as written, the newer first. Null for a word rule."
        ),
    )
    similarity = RoundedOutField()
    opened_at = serializers.DateTimeField()
    resolved_at = serializers.DateTimeField(allow_null=True)
    resolved_by = BlankAsNullOutField(allow_null=True)
    note = serializers.CharField(allow_blank=True)


class ConflictMemberOutSerializer(serializers.Serializer):
    fact_id = serializers.UUIDField(source="id")
    text = serializers.CharField()
    category = serializers.CharField(allow_blank=True)
    status = serializers.ChoiceField(choices=FactStatus.choices)
    recorded_from = serializers.DateTimeField()
    valid_from = serializers.DateTimeField(allow_null=True)
    valid_to = serializers.DateTimeField(allow_null=True)
    source_event_id = serializers.UUIDField(allow_null=True)
    kept = serializers.BooleanField(allow_null=True)
    similarity_to = serializers.DictField(
        child=serializers.FloatField(), source="similarities", help_text="fact id -> cosine similarity"
    )


class ConflictDetailSerializer(ConflictOutSerializer):
    members = ConflictMemberOutSerializer(many=True)


_conflict_out = response_writer(ConflictOutSerializer)
_conflict_member_out = response_writer(ConflictMemberOutSerializer, rows=True)


def conflict_out(conflict_set, members: list[dict] | None = None) -> dict:
    """A conflict set; with `members` (facts.selectors.conflict_members' rows), ConflictDetailSerializer's shape."""
    out = _conflict_out(conflict_set)
    if members is not None:
        out["members"] = [_conflict_member_out(m) for m in members]
    return out


class ConflictPageSerializer(serializers.Serializer):
    conflicts = ConflictOutSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class ErasedSerializer(serializers.Serializer):
    project_id = serializers.CharField()
    subject_id = serializers.CharField()
    deleted = serializers.DictField(child=serializers.IntegerField(), help_text="rows deleted, per table")
