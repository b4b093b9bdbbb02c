"""The knobs of one context call, as one frozen value: the defaults are today's named constants (context/scoring.py,
context/retrieval.py, context/assembler.py, HAKI_RECALL_MAX_DISTANCE). A plain call runs with `default_config()`;
a replay (context/replay.py) may run with some of them overridden, each within OVERRIDE_RANGES.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from django.conf import settings

from context import retrieval, scoring

# The share of the budget held back for multi-hop (context/assembler.py).
MULTI_HOP_BUDGET_SHARE = 0.2  # see docs/quality.md for the measurement behind it


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

    @property
    def tau_seconds(self) -> float:
        return self.tau_days * 86400.0

    def as_dict(self) -> dict:
        return asdict(self)

    def with_overrides(self, overrides: dict) -> AssemblyConfig:
        return replace(self, **{k: v for k, v in overrides.items() if k in CONFIG_FIELDS})

    @classmethod
    def from_dict(cls, data: dict) -> AssemblyConfig:
        return cls(**{k: v for k, v in data.items() if k in CONFIG_FIELDS})


CONFIG_FIELDS = frozenset(AssemblyConfig.__dataclass_fields__)

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
}
INTEGER_OVERRIDES = frozenset({"dense_top_k", "lexical_top_k"})


def default_config() -> AssemblyConfig:
    """Today's configuration: the named constants and the relevance floor of the environment."""
    return AssemblyConfig(max_distance=float(settings.HAKI_RECALL_MAX_DISTANCE))
