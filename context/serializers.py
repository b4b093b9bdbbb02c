from django.conf import settings
from rest_framework import serializers

from hakimem.errors import ApiError, ErrorCode
from hakimem.fields import ScopeIdField, StrictCharField
from hakimem.serializers import StrictSerializer, iso

QUERY_MAX = 4000


class ContextRequestSerializer(StrictSerializer):
    project_id = ScopeIdField()
    subject_id = ScopeIdField()
    query = StrictCharField(max_length=QUERY_MAX, trim_whitespace=False, allow_blank=False)
    budget_tokens = serializers.JSONField(required=False, allow_null=True)  # checked by validate_budget

    def validate_query(self, value):
        if not value.strip():
            raise serializers.ValidationError("must contain non-whitespace text")
        return value


def validate_budget(data: dict) -> int:
    """budget_tokens: a positive JSON integer up to HAKI_MAX_BUDGET_TOKENS. Strings, floats (even 900.0),
    booleans, zero, negatives and larger values are refused with `budget_exceeded`."""
    limit = settings.HAKI_MAX_BUDGET_TOKENS
    if "budget_tokens" not in data:
        return settings.HAKI_DEFAULT_BUDGET_TOKENS
    value = data["budget_tokens"]
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= limit:
        raise ApiError(
            ErrorCode.BUDGET_EXCEEDED,
            f"budget_tokens must be a positive integer no larger than {limit}.",
            details={"budget_tokens": value if isinstance(value, int | float | str | bool | None) else str(value), "max": limit},
        )
    return value


def packet_fact(decided) -> dict:
    """A served fact as the packet shows it (decided: context.assembler.Decided)."""
    item = decided.item
    return {
        "id": str(item.id),
        "text": item.text,
        "category": item.category,
        "kind": item.kind,
        "score": round(item.score, 6),
        "tokens": decided.tokens,
        "reason_code": str(decided.reason),
        "valid_from": iso(item.valid_from),
        "recorded_from": iso(item.recorded_from),
        "metadata": item.metadata,
    }


def packet_episode(decided) -> dict:
    item = decided.item
    return {
        "id": str(item.id),
        "text": item.text,
        "occurred_at": iso(item.occurred_at),
        "score": round(item.score, 6),
        "tokens": decided.tokens,
        "metadata": item.metadata,
    }


# --- the response, as the OpenAPI schema describes it --------------------------------------------------------

class PacketFactSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    text = serializers.CharField()
    category = serializers.CharField(allow_blank=True)
    kind = serializers.CharField()
    score = serializers.FloatField()
    tokens = serializers.IntegerField()
    reason_code = serializers.CharField()
    valid_from = serializers.DateTimeField(allow_null=True)
    recorded_from = serializers.DateTimeField()
    metadata = serializers.DictField()


class PacketEpisodeSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    text = serializers.CharField()
    occurred_at = serializers.DateTimeField()
    score = serializers.FloatField()
    tokens = serializers.IntegerField()
    metadata = serializers.DictField()


class ContextPacketSerializer(serializers.Serializer):
    trace_id = serializers.UUIDField()
    status = serializers.CharField()
    facts = PacketFactSerializer(many=True)
    episodes = PacketEpisodeSerializer(many=True)
    warnings = serializers.ListField(child=serializers.CharField())
    empty_reason = serializers.CharField(allow_null=True)
    budget_tokens = serializers.IntegerField()
    used_tokens = serializers.IntegerField()
    rendered = serializers.CharField(allow_blank=True, help_text='the packet as a prompt block, "" when empty')


class ContextRequestSchema(ContextRequestSerializer):
    """ContextRequestSerializer as documented: budget_tokens is checked apart (validate_budget)."""

    budget_tokens = serializers.IntegerField(required=False, min_value=1, help_text="default 900, at most HAKI_MAX_BUDGET_TOKENS")
