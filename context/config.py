"""The knobs of one context call, as one frozen value: the defaults are today's named constants (context/scoring.py,
context/retrieval.py) and the relevance floor (recall_max_distance()). A plain call runs with
`default_config()`; a replay (context/replay.py) may run with some of them overridden, each within OVERRIDE_RANGES.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

from context import retrieval, scoring
from hakimem.embeddings import thresholds

# The share of the budget held back for multi-hop (context/packing.py).
MULTI_HOP_BUDGET_SHARE = 0.2  # why a fifth: docs/quality.md, "Current results and the tuning behind them"


@dataclass(frozen=True)
class AssemblyConfig:
    w_similarity: float = scoring.W_SIMILARITY
    w_text_rank: float = scoring.W_TEXT
    w_recency: float = scoring.W_RECENCY
    tau_days: float = scoring.TAU_DAYS
    max_distance: float = 0.0  # the relevance floor; 0 = off
    dense_top_k: int = retrieval.DENSE_TOP_K
    lexical_top_k: int = retrieval.LEXICAL_TOP_K
    multi_hop_share: float = MULTI_HOP_BUDGET_SHARE
    w_importance: float = scoring.W_IMPORTANCE  # tiered calls only
    w_access: float = scoring.W_ACCESS  # tiered calls only
    w_same_sitting: float = scoring.W_SAME_SITTING  # episodes of the best episodes' sitting
    w_same_stamp: float = scoring.W_SAME_STAMP  # facts of the best facts' stamp

    @property
    def tau_seconds(self) -> float:
        return self.tau_days * 86400.0

    def as_dict(self) -> dict:
        return asdict(self)

    def with_overrides(self, overrides: dict) -> AssemblyConfig:
        return replace(self, **{k: v for k, v in overrides.items() if k in CONFIG_FIELDS})

    @classmethod
    def from_dict(cls, data: dict) -> AssemblyConfig:
        """A recorded configuration; a knob added since it was recorded takes the value that had its effect then."""
        return cls(**{**ADDED_SINCE, **{k: v for k, v in data.items() if k in CONFIG_FIELDS}})


CONFIG_FIELDS = frozenset(AssemblyConfig.__dataclass_fields__)
# Knobs added after traces were first recorded, with the value that does what the calls of before did.
ADDED_SINCE = {"w_same_sitting": 0.0, "w_same_stamp": 0.0}

# What a replay may override, and within what (inclusive bounds). budget_tokens is checked as POST /v1/context
# checks it (1..HAKI_MAX_BUDGET_TOKENS, budget_exceeded). Widths are bounded: each unit of width is a row scored
# in SQL, and past 1024 a replay of a large scope would cost seconds.
OVERRIDE_RANGES = {
    "w_similarity": (0.0, 1.0),
    "w_text_rank": (0.0, 1.0),
    "w_recency": (0.0, 1.0),
    "tau_days": (0.01, 3650.0),
    "max_distance": (0.0, 2.0),
    "dense_top_k": (1, 1024),
    "lexical_top_k": (0, 1024),
    "multi_hop_share": (0.0, 1.0),
    "w_same_sitting": (0.0, 1.0),
    "w_same_stamp": (0.0, 1.0),
}
INTEGER_OVERRIDES = frozenset({"dense_top_k", "lexical_top_k"})


# --- what a call may ask for beyond seed 000 (POST /v1/context; context/serializers.py validates it) ----------

# Per-tier budgets of a tiered call, in tokens (seed 003's defaults, plus 300 for preferences).
DEFAULT_TIER_BUDGETS = {"identity": 500, "preferences": 300, "facts": 2000, "episodes": 1000, "procedures": 500}
MAX_CANDIDATE_LIMIT = 256  # each candidate is a row scored in SQL and a decision row written: bounded per call
MAX_CATEGORY_BOOST = 10.0
MAX_CATEGORY_BOOSTS = 32


@dataclass(frozen=True)
class CallOptions:
    """A call's asks. The defaults are a plain call: seed 000's single budget, exactly as before. `tiers` switches to
    seed 003's assembler (identity blocks, five signals, a budget per tier, the five-section prompt, query-time
    contradictions); boosts, min_score, candidate_limit and the render format work with either."""

    tiers: bool = False
    tier_budgets: dict = field(default_factory=dict)  # tier -> tokens; every tier present once tiers is on
    category_boosts: dict = field(default_factory=dict)  # fact or procedure category -> score multiplier
    min_score: float = 0.0  # 0 = off
    candidate_limit: int | None = None  # None: retrieval.CANDIDATE_LIMIT
    render_format: str = "xml"

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict | None) -> CallOptions:
        data = data or {}
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


PLAIN = CallOptions()


def recall_max_distance() -> float:
    """The relevance floor in effect: HAKI_RECALL_MAX_DISTANCE when set (0 = off), else the floor calibrated for
    the configured embedder, read at call time (a harness may switch the provider in-process)."""
    return thresholds().recall_max_distance


def default_config() -> AssemblyConfig:
    """Today's configuration: the named constants and the relevance floor in effect."""
    return AssemblyConfig(max_distance=recall_max_distance())
