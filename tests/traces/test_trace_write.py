"""traces.services.trace_record: what it stores is what GET /v1/inspect answers, value for value."""
import pytest
from django.utils import timezone

from tests.conftest import PROJECT
from tests.facts.factories import EventFactory, FactFactory
from traces.models import Decision, Trace
from traces.services import DecisionRow, trace_record

pytestmark = pytest.mark.django_db

# Score parts whose sixth decimal is hard to get right: ties in decimal that are not ties in binary, tiny and
# negative values, thirds, a large one, and missing parts.
AWKWARD = [0.1234565, 0.0000005, 1 / 3, 2 / 3, -0.0000004, 123.4567891, 1e-9, 0.9999995, 0.5, None]


def awkward(n: int):
    return AWKWARD[n % len(AWKWARD)]


def test_inspect_answers_each_decision_as_recorded_with_scores_to_six_decimals(api):
    # given decisions about facts and an episode with awkward scores, every reason code, an entity and a winner
    facts = FactFactory.create_batch(9)
    event = EventFactory()
    codes = ["included", "multi_hop_expansion", "over_budget", "below_relevance_floor", "conflict_open", "volatility_expired",
             "consent_missing", "superseded_in_context", "below_min_score"]
    rows = [
        DecisionRow(item_type="fact", item_id=fact.id, reason_code=code, rank=rank, score=awkward(rank),
                    similarity=awkward(rank + 1), cosine_distance=awkward(rank + 2), text_rank=awkward(rank + 3),
                    recency=awkward(-1 - rank), tokens=10 + rank, entity="Lisbon" if code == "multi_hop_expansion" else "",
                    by_item=facts[0].id if code == "superseded_in_context" else None)
        for rank, (fact, code) in enumerate(zip(facts, codes), start=1)
    ] + [DecisionRow(item_type="episode", item_id=event.id, reason_code="included", rank=10, score=None,
                     similarity=None, cosine_distance=None, text_rank=None, recency=None, tokens=3)]

    # when they are recorded
    trace_id = trace_record(trace={
        "project_id": PROJECT, "subject_id": "alice", "query": "where?", "budget_tokens": 900, "used_tokens": 40,
        "status": "ok", "empty_reason": None, "warnings": ["w"], "rendered": "<haki_memory>x</haki_memory>",
        "facts_served": 2, "episodes_served": 1, "candidates": 10, "embedder": "hashing",
        "timings": {"embed": 1.25}, "latency_ms": 12.5, "created_at": timezone.now(),
    }, decisions=rows)

    # then inspect answers every one of them, each score part as round(value, 6)
    body = api.get(f"/v1/inspect/{trace_id}").json()
    assert body["packet"]["warnings"] == ["w"] and body["timings_ms"] == {"embed": 1.25}
    kinds = {"included": "included", "multi_hop_expansion": "included", "over_budget": "excluded",
             "below_relevance_floor": "excluded", "conflict_open": "blocked", "volatility_expired": "blocked",
             "consent_missing": "blocked", "superseded_in_context": "excluded", "below_min_score": "excluded"}
    expected = [
        {"item_type": r.item_type, "item_id": str(r.item_id), "decision": kinds[r.reason_code], "reason_code": r.reason_code,
         "rank": r.rank, "score": None if r.score is None else round(r.score, 6),
         "score_parts": {name: None if getattr(r, name) is None else round(getattr(r, name), 6)
                         for name in ("similarity", "cosine_distance", "text_rank", "recency")},
         "tokens": r.tokens, "entity": r.entity or None,
         "superseded_by": str(r.by_item) if r.by_item else None}
        for r in rows
    ]
    assert [{k: v for k, v in d.items() if k != "text"} for d in body["decisions"]] == expected


def test_a_trace_without_decisions_is_written():
    trace_id = trace_record(trace={
        "project_id": PROJECT, "subject_id": "alice", "query": "anything?", "budget_tokens": 900, "used_tokens": 0,
        "status": "ok", "empty_reason": None, "warnings": [], "rendered": "", "facts_served": 0,
        "episodes_served": 0, "candidates": 0, "embedder": "hashing", "timings": {}, "latency_ms": 1.0,
        "created_at": timezone.now(),
    }, decisions=[])
    assert Trace.objects.filter(id=trace_id).exists() and not Decision.objects.exists()
