from django.conf import settings
from rest_framework import serializers

from context.config import INTEGER_OVERRIDES, OVERRIDE_RANGES
from hakimem.errors import ApiError, ErrorCode
from hakimem.fields import (
    ScopeIdField,
    StrictCharField,
    StrictFloatField,
    StrictIntegerField,
)
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


# --- POST /v1/inspect/{trace_id}/replay --------------------------------------------------------------------

_OVERRIDE_HELP = {
    "w_similarity": "weight of the cosine similarity", "w_text_rank": "weight of the text rank",
    "w_recency": "weight of the recency", "tau_days": "recency time constant, days",
    "max_distance": "relevance floor (cosine distance; 0 = off)", "dense_top_k": "phase-1 nearest facts",
    "lexical_top_k": "phase-1 full-text matches (0: no lexical leg)", "multi_hop_share": "share of the budget held for multi-hop",
}


def _override_field(name):
    low, high = OVERRIDE_RANGES[name]
    field = StrictIntegerField if name in INTEGER_OVERRIDES else StrictFloatField
    return field(required=False, min_value=low, max_value=high, help_text=f"{_OVERRIDE_HELP[name]}, {low} to {high}")


class ReplayOverridesSerializer(StrictSerializer):
    """What a replay may change; anything absent keeps its value (today's, or the original call's as_of original)."""

    w_similarity = _override_field("w_similarity")
    w_text_rank = _override_field("w_text_rank")
    w_recency = _override_field("w_recency")
    tau_days = _override_field("tau_days")
    max_distance = _override_field("max_distance")
    dense_top_k = _override_field("dense_top_k")
    lexical_top_k = _override_field("lexical_top_k")
    multi_hop_share = _override_field("multi_hop_share")
    budget_tokens = serializers.IntegerField(required=False, min_value=1, help_text="1 to HAKI_MAX_BUDGET_TOKENS (400 budget_exceeded)")

    def to_internal_value(self, data):
        if isinstance(data, dict) and "budget_tokens" in data:
            budget = validate_budget(data)  # budget_exceeded, as POST /v1/context answers
            return {**super().to_internal_value({k: v for k, v in data.items() if k != "budget_tokens"}),
                    "budget_tokens": budget}
        return super().to_internal_value(data)


class ReplayRequestSerializer(StrictSerializer):
    as_of = serializers.ChoiceField(choices=["now", "original"], required=False, default="now",
                                    help_text='"now": the memory today; "original": as it stood at the call\'s time')
    overrides = ReplayOverridesSerializer(required=False)
