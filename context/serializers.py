from django.conf import settings
from rest_framework import serializers

from context.config import (
    DEFAULT_TIER_BUDGETS,
    INTEGER_OVERRIDES,
    MAX_CANDIDATE_LIMIT,
    MAX_CATEGORY_BOOST,
    MAX_CATEGORY_BOOSTS,
    OVERRIDE_RANGES,
    CallOptions,
)
from context.render import RENDER_FORMATS, XML
from facts.models import CATEGORY_MAX
from hakimem.errors import ApiError, ErrorCode
from hakimem.fields import (
    NOT_BLANK,
    ScopeIdField,
    StrictBooleanField,
    StrictCharField,
    StrictFloatField,
    StrictIntegerField,
    storable_text,
)
from hakimem.serializers import StrictSerializer
from traces.models import EmptyReason

QUERY_MAX = 4000


MIN_SCORE_MAX = 10.0  # a score is at most ~1 before boosts, MAX_CATEGORY_BOOST times that after


class TierBudgetsSerializer(StrictSerializer):
    """Tokens per tier; a tier left out keeps its default (DEFAULT_TIER_BUDGETS), 0 turns it off."""

    identity = StrictIntegerField(required=False, min_value=0, help_text="default 500")
    preferences = StrictIntegerField(required=False, min_value=0, help_text="default 300")
    facts = StrictIntegerField(required=False, min_value=0, help_text="default 2000")
    episodes = StrictIntegerField(required=False, min_value=0, help_text="default 1000")
    procedures = StrictIntegerField(required=False, min_value=0, help_text="default 500")

    @classmethod
    def schema_rules(cls) -> dict:
        return {"properties": {tier: {"maximum": settings.HAKI_MAX_BUDGET_TOKENS} for tier in DEFAULT_TIER_BUDGETS}}

    def validate(self, attrs):
        limit = settings.HAKI_MAX_BUDGET_TOKENS
        too_big = [tier for tier, tokens in attrs.items() if tokens > limit]
        if too_big:
            raise serializers.ValidationError({tier: [f"must be at most {limit}"] for tier in too_big})
        return attrs


class CategoryBoostsField(serializers.DictField):
    """{"decision": 1.5}: a fact's or procedure's score is multiplied by its category's boost."""

    def __init__(self, **kwargs):
        super().__init__(child=StrictFloatField(min_value=0.0, max_value=MAX_CATEGORY_BOOST), **kwargs)

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            raise serializers.ValidationError("must be an object of category: multiplier")
        if len(data) > MAX_CATEGORY_BOOSTS:
            raise serializers.ValidationError(f"at most {MAX_CATEGORY_BOOSTS} categories")
        long = [k for k in data if len(k) > CATEGORY_MAX]
        if long:
            raise serializers.ValidationError(f"a category is at most {CATEGORY_MAX} characters")
        # The trace stores the call's boosts: a key it cannot hold answered 200 with a trace that was never written.
        if not all(storable_text(k) for k in data):
            raise serializers.ValidationError("a category must not contain U+0000 or an unpaired surrogate")
        return super().to_internal_value(data)


class ContextRequestSerializer(StrictSerializer):
    project_id = ScopeIdField()
    subject_id = ScopeIdField()
    query = StrictCharField(max_length=QUERY_MAX, trim_whitespace=False, allow_blank=False, validators=[NOT_BLANK])
    budget_tokens = serializers.JSONField(required=False, allow_null=True)  # checked by validate_budget
    # Beyond seed 000 (context.config.CallOptions); a request without any of them is a plain call, as before.
    tiers = StrictBooleanField(
        required=False,
        help_text="seed 003's assembler: identity blocks, five signals, "
        "a budget per tier, five sections, query-time contradictions",
    )
    tier_budgets = TierBudgetsSerializer(
        required=False,
        help_text="implies tiers; each tier defaults to "
        "identity 500, preferences 300, facts 2000, episodes 1000, procedures 500",
    )
    category_boosts = CategoryBoostsField(required=False)
    min_score = StrictFloatField(
        required=False,
        min_value=0.0,
        max_value=MIN_SCORE_MAX,
        help_text="candidates scoring below it are left out (below_min_score); 0 = off",
    )
    candidate_limit = StrictIntegerField(
        required=False,
        min_value=1,
        max_value=MAX_CANDIDATE_LIMIT,
        help_text="candidates kept after phase 2 (default 128)",
    )
    render_format = serializers.ChoiceField(
        choices=RENDER_FORMATS, required=False, help_text="xml (default) or markdown"
    )

    @classmethod
    def schema_rules(cls) -> dict:
        # tier budgets need tiers: not both tier_budgets and "tiers": false
        return {"not": {"required": ["tiers", "tier_budgets"], "properties": {"tiers": {"enum": [False]}}}}

    def validate(self, attrs):
        if attrs.get("tiers") is False and "tier_budgets" in attrs:
            raise serializers.ValidationError(
                {"tier_budgets": ["tier budgets need tiers: leave tiers out or set it true"]}
            )
        return attrs


def call_options(params: dict) -> CallOptions:
    """The validated request's asks; tier_budgets implies tiers."""
    tiered = params.get("tiers", False) or "tier_budgets" in params
    return CallOptions(
        tiers=tiered,
        tier_budgets={**DEFAULT_TIER_BUDGETS, **params.get("tier_budgets", {})} if tiered else {},
        category_boosts=params.get("category_boosts", {}),
        min_score=params.get("min_score", 0.0),
        candidate_limit=params.get("candidate_limit"),
        render_format=params.get("render_format", XML),
    )


def call_budget(sent: int | None, options: CallOptions) -> int:
    """The call's budget: `sent` (budget_tokens as validate_budget checked it, None when absent); else the sum of a
    tiered call's tier budgets, within HAKI_MAX_BUDGET_TOKENS, or HAKI_DEFAULT_BUDGET_TOKENS."""
    if sent is not None:
        return sent
    if options.tiers:
        return max(1, min(sum(options.tier_budgets.values()), settings.HAKI_MAX_BUDGET_TOKENS))
    return settings.HAKI_DEFAULT_BUDGET_TOKENS


def validate_budget(data: dict) -> int:
    """budget_tokens, which `data` holds: a positive JSON integer up to HAKI_MAX_BUDGET_TOKENS. Strings, floats
    (even 900.0), booleans, zero, negatives and larger values are refused with `budget_exceeded`. When none is sent,
    call_budget decides."""
    limit = settings.HAKI_MAX_BUDGET_TOKENS
    value = data["budget_tokens"]
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= limit:
        raise ApiError(
            ErrorCode.BUDGET_EXCEEDED,
            f"budget_tokens must be a positive integer no larger than {limit}.",
            details={
                "budget_tokens": value if isinstance(value, int | float | str | bool | None) else str(value),
                "max": limit,
            },
        )
    return value


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
    tier = serializers.CharField(required=False, help_text="tiered calls: preferences or facts")


class PacketEpisodeSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    text = serializers.CharField()
    occurred_at = serializers.DateTimeField()
    score = serializers.FloatField()
    tokens = serializers.IntegerField()
    metadata = serializers.DictField()


class PacketIdentitySerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    text = serializers.CharField()
    tokens = serializers.IntegerField()


class PacketProcedureSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    title = serializers.CharField()
    text = serializers.CharField()
    category = serializers.CharField(allow_blank=True)
    score = serializers.FloatField()
    tokens = serializers.IntegerField()
    metadata = serializers.DictField()


class TierUseSerializer(serializers.Serializer):
    budget_tokens = serializers.IntegerField()
    used_tokens = serializers.IntegerField(help_text="what the tier's section adds to rendered, header included")


class ContextPacketSerializer(serializers.Serializer):
    trace_id = serializers.UUIDField()
    status = serializers.CharField()
    facts = PacketFactSerializer(many=True)
    episodes = PacketEpisodeSerializer(many=True)
    warnings = serializers.ListField(child=serializers.CharField())
    empty_reason = serializers.ChoiceField(
        choices=EmptyReason.values,
        allow_null=True,
        help_text="null when something was served; else why nothing was, the first that holds: scope_unknown (nothing "
        "ever written for the subject), scope_empty (nothing it holds may be served now), budget_too_small "
        "(a candidate did not fit), all_blocked (every relevant candidate blocked by an open conflict, "
        "consent or expired volatility), no_relevant_memory (nothing relevant enough)",
    )
    empty_details = serializers.DictField(
        allow_null=True,
        help_text='budget_too_small: {"smallest_fitting_budget": N} (tiered calls add "tier" and, when that tier\'s '
        'budget is too small, "smallest_fitting_tier_budget"); all_blocked: the blocked candidates per '
        'reason code ({"conflict_open": 2}); null otherwise',
    )
    budget_tokens = serializers.IntegerField()
    used_tokens = serializers.IntegerField(
        help_text="estimate_tokens(rendered): what the block costs, wrapper and "
        "section headers included; never above budget_tokens"
    )
    rendered = serializers.CharField(allow_blank=True, help_text='the packet as a prompt block, "" when empty')
    render_format = serializers.CharField(
        required=False, help_text="present when the call asked for more than a plain one"
    )
    identity = PacketIdentitySerializer(many=True, required=False, help_text="tiered calls")
    procedures = PacketProcedureSerializer(many=True, required=False, help_text="tiered calls")
    tiers = serializers.DictField(child=TierUseSerializer(), required=False, help_text="tiered calls")


class ContextRequestSchema(ContextRequestSerializer):
    """ContextRequestSerializer as documented: budget_tokens is checked apart (validate_budget)."""

    budget_tokens = serializers.IntegerField(
        required=False, min_value=1, help_text="default 900, at most HAKI_MAX_BUDGET_TOKENS"
    )

    @classmethod
    def schema_rules(cls) -> dict:
        return {**super().schema_rules(), "properties": {"budget_tokens": {"maximum": settings.HAKI_MAX_BUDGET_TOKENS}}}


# --- POST /v1/inspect/{trace_id}/replay --------------------------------------------------------------------

_OVERRIDE_HELP = {
    "w_similarity": "weight of the cosine similarity",
    "w_text_rank": "weight of the text rank",
    "w_recency": "weight of the recency",
    "tau_days": "recency time constant, days",
    "max_distance": "relevance floor (cosine distance; 0 = off)",
    "dense_top_k": "phase-1 nearest facts",
    "lexical_top_k": "phase-1 full-text matches (0: no lexical leg)",
    "multi_hop_share": "share of the budget held for multi-hop",
    "w_same_sitting": "lift of the episodes of the best episodes' sitting",
    "w_same_stamp": "lift of the facts that open with the stamp of one of the best facts",
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
    w_same_sitting = _override_field("w_same_sitting")
    w_same_stamp = _override_field("w_same_stamp")
    budget_tokens = serializers.IntegerField(
        required=False, min_value=1, help_text="1 to HAKI_MAX_BUDGET_TOKENS (400 budget_exceeded)"
    )

    @classmethod
    def schema_rules(cls) -> dict:
        return {"properties": {"budget_tokens": {"maximum": settings.HAKI_MAX_BUDGET_TOKENS}}}

    def to_internal_value(self, data):
        if isinstance(data, dict) and "budget_tokens" in data:
            budget = validate_budget(data)  # budget_exceeded, as POST /v1/context answers
            return {
                **super().to_internal_value({k: v for k, v in data.items() if k != "budget_tokens"}),
                "budget_tokens": budget,
            }
        return super().to_internal_value(data)


class ReplayRequestSerializer(StrictSerializer):
    as_of = serializers.ChoiceField(
        choices=["now", "original"],
        required=False,
        default="now",
        help_text='"now": the memory today; "original": as it stood at the call\'s time',
    )
    overrides = ReplayOverridesSerializer(required=False)
