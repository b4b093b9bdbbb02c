"""Context calls recorded as the assembler records them (traces.services.trace_record), with the numbers a
test wants to pin: when, how slow, how many tokens, and the decision about each item."""

import uuid

from traces.models import DECISION_OF_REASON, DecisionKind
from traces.services import DecisionRow, trace_record
from tests.conftest import PROJECT


def _rows(item_type: str, items) -> list[DecisionRow]:
    return [
        DecisionRow(
            item_type=item_type,
            item_id=item.id,
            reason_code=reason_code,
            rank=rank,
            score=1.0 / rank,
            similarity=0.8,
            cosine_distance=0.2,
            text_rank=0.1,
            recency=0.9,
            tokens=len(item.text) // 4 + 1,
        )
        for rank, (item, reason_code) in enumerate(items, start=1)
    ]


def record_call(
    *,
    at,
    project_id=PROJECT,
    subject_id="alice",
    query="what does Alice like?",
    latency_ms=10.0,
    used_tokens=None,
    budget_tokens=900,
    facts=(),
    episodes=(),
    empty_reason=None,
    warnings=(),
    rendered="",
    replay_of=None,
) -> uuid.UUID:
    """facts and episodes: (item, reason_code) pairs, in rank order. used_tokens defaults to the served items'
    tokens (0 when none was served, as for an empty call). Returns the trace id."""
    served = lambda pairs: sum(DECISION_OF_REASON[code] == DecisionKind.INCLUDED for _, code in pairs)  # noqa: E731
    if used_tokens is None:
        used_tokens = sum(
            row.tokens
            for row in _rows("fact", facts) + _rows("episode", episodes)
            if DECISION_OF_REASON[row.reason_code] == DecisionKind.INCLUDED
        )
    return trace_record(
        trace={
            "project_id": project_id,
            "subject_id": subject_id,
            "query": query,
            "budget_tokens": budget_tokens,
            "used_tokens": used_tokens,
            "status": "degraded" if warnings else "ok",
            "empty_reason": empty_reason,
            "warnings": list(warnings),
            "rendered": rendered,
            "facts_served": served(facts),
            "episodes_served": served(episodes),
            "candidates": len(facts) + len(episodes),
            "embedder": "hashing",
            "timings": {"embed": 1.5, "retrieve": latency_ms - 2.5, "pack": 1.0},
            "latency_ms": latency_ms,
            "created_at": at,
            "replay_of": replay_of,
            "replay": {"as_of": None, "overrides": {}} if replay_of else None,
        },
        decisions=_rows("fact", facts) + _rows("episode", episodes),
    )
