"""traces.services.trace_record: what it stores is what GET /v1/inspect answers, value for value."""

import pytest
from django.utils import timezone

from tests.conftest import PROJECT
from tests.facts.factories import EventFactory, FactFactory, IdentityBlockFactory, ProcedureFactory
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
    codes = [
        "included",
        "multi_hop_expansion",
        "over_budget",
        "below_relevance_floor",
        "conflict_open",
        "volatility_expired",
        "consent_missing",
        "superseded_in_context",
        "below_min_score",
    ]
    rows = [
        DecisionRow(
            item_type="fact",
            item_id=fact.id,
            reason_code=code,
            rank=rank,
            score=awkward(rank),
            similarity=awkward(rank + 1),
            cosine_distance=awkward(rank + 2),
            text_rank=awkward(rank + 3),
            recency=awkward(-1 - rank),
            tokens=10 + rank,
            entity="Lisbon" if code == "multi_hop_expansion" else "",
            by_item=facts[0].id if code == "superseded_in_context" else None,
        )
        for rank, (fact, code) in enumerate(zip(facts, codes), start=1)
    ] + [
        DecisionRow(
            item_type="episode",
            item_id=event.id,
            reason_code="neighbouring_turn",
            rank=10,
            score=None,
            similarity=None,
            cosine_distance=None,
            text_rank=None,
            recency=None,
            tokens=3,
        )
    ]

    # when they are recorded
    trace_id = trace_record(
        trace={
            "project_id": PROJECT,
            "subject_id": "alice",
            "query": "where?",
            "budget_tokens": 900,
            "used_tokens": 40,
            "status": "ok",
            "empty_reason": None,
            "warnings": ["w"],
            "rendered": "<haki_memory>x</haki_memory>",
            "facts_served": 2,
            "episodes_served": 1,
            "candidates": 10,
            "embedder": "hashing",
            "timings": {"embed": 1.25},
            "latency_ms": 12.5,
            "created_at": timezone.now(),
        },
        decisions=rows,
    )

    # then inspect answers every one of them, each score part as round(value, 6)
    body = api.get(f"/v1/inspect/{trace_id}").json()
    assert body["packet"]["warnings"] == ["w"] and body["timings_ms"] == {"embed": 1.25}
    kinds = {
        "included": "included",
        "multi_hop_expansion": "included",
        "over_budget": "excluded",
        "below_relevance_floor": "excluded",
        "conflict_open": "blocked",
        "volatility_expired": "blocked",
        "consent_missing": "blocked",
        "superseded_in_context": "excluded",
        "below_min_score": "excluded",
        "neighbouring_turn": "included",
    }
    expected = [
        {
            "item_type": r.item_type,
            "item_id": str(r.item_id),
            "decision": kinds[r.reason_code],
            "reason_code": r.reason_code,
            "rank": r.rank,
            "score": None if r.score is None else round(r.score, 6),
            "score_parts": {
                name: None if getattr(r, name) is None else round(getattr(r, name), 6)
                for name in ("similarity", "cosine_distance", "text_rank", "recency")
            },
            "tokens": r.tokens,
            "entity": r.entity or None,
            "tier": None,
            "superseded_by": str(r.by_item) if r.by_item else None,
        }
        for r in rows
    ]
    assert [{k: v for k, v in d.items() if k != "text"} for d in body["decisions"]] == expected


def test_a_trace_without_decisions_is_written():
    trace_id = trace_record(
        trace={
            "project_id": PROJECT,
            "subject_id": "alice",
            "query": "anything?",
            "budget_tokens": 900,
            "used_tokens": 0,
            "status": "ok",
            "empty_reason": None,
            "warnings": [],
            "rendered": "",
            "facts_served": 0,
            "episodes_served": 0,
            "candidates": 0,
            "embedder": "hashing",
            "timings": {},
            "latency_ms": 1.0,
            "created_at": timezone.now(),
        },
        decisions=[],
    )
    assert Trace.objects.filter(id=trace_id).exists() and not Decision.objects.exists()


def _trace(**extra) -> dict:
    return {
        "project_id": PROJECT,
        "subject_id": "alice",
        "query": "how do we deploy?",
        "budget_tokens": 4300,
        "used_tokens": 60,
        "status": "ok",
        "empty_reason": None,
        "warnings": [],
        "rendered": "<haki_memory/>",
        "facts_served": 1,
        "episodes_served": 0,
        "candidates": 4,
        "embedder": "hashing",
        "timings": {},
        "latency_ms": 3.0,
        "created_at": timezone.now(),
        **extra,
    }


def _row(item_type, item, rank, tier="", reason_code="included") -> DecisionRow:
    return DecisionRow(
        item_type=item_type,
        item_id=item.id,
        reason_code=reason_code,
        rank=rank,
        score=0.5,
        similarity=0.4,
        cosine_distance=0.6,
        text_rank=0.1,
        recency=0.9,
        tokens=7,
        tier=tier,
    )


def test_decisions_about_procedures_and_identity_blocks_are_recorded_with_their_tier(api):
    # given a tiered call's decisions about each kind of item
    wide, own = IdentityBlockFactory(subject_id="", name="persona"), IdentityBlockFactory(name="tone")
    procedure = ProcedureFactory(title="Deployment", text="Run the pipeline.")
    fact, event = FactFactory(kind="preference"), EventFactory()
    rows = [
        _row("procedure", procedure, 1, "procedures"),
        _row("episode", event, 1, "episodes"),
        _row("fact", fact, 1, "preferences"),
        _row("identity", wide, 1, "identity"),
        _row("identity", own, 2, "identity"),
        _row("procedure", ProcedureFactory(), 2, "procedures", "over_budget"),
    ]
    # when they are recorded
    trace_id = trace_record(trace=_trace(), decisions=rows)
    # then each names its item in its own column, with its tier
    stored = {(d.item_type, d.rank): d for d in Decision.objects.filter(trace_id=trace_id)}
    assert stored[("identity", 1)].identity_block_id == wide.id and stored[("identity", 1)].tier == "identity"
    assert stored[("procedure", 1)].procedure_id == procedure.id and stored[("procedure", 1)].fact_id is None
    assert stored[("procedure", 2)].decision == "excluded"
    assert stored[("fact", 1)].tier == "preferences" and stored[("episode", 1)].event_id == event.id
    # and inspect lists them in the prompt's section order, with their texts and tiers
    body = api.get(f"/v1/inspect/{trace_id}").json()
    assert [(d["item_type"], d["rank"], d["tier"]) for d in body["decisions"]] == [
        ("identity", 1, "identity"),
        ("identity", 2, "identity"),
        ("fact", 1, "preferences"),
        ("episode", 1, "episodes"),
        ("procedure", 1, "procedures"),
        ("procedure", 2, "procedures"),
    ]
    assert body["decisions"][0]["text"] == wide.text
    assert body["decisions"][4]["text"] == "Deployment: Run the pipeline."


def test_a_plain_calls_decisions_have_no_tier():
    trace_id = trace_record(trace=_trace(), decisions=[_row("fact", FactFactory(), 1)])
    assert Decision.objects.get(trace_id=trace_id).tier == ""


@pytest.mark.parametrize("kind", ["procedure", "identity"])
def test_a_trace_naming_a_procedure_or_block_that_no_longer_exists_is_not_written(kind):
    # given a call that served an item deleted before its trace is written (an erasure, a block's DELETE)
    item = ProcedureFactory() if kind == "procedure" else IdentityBlockFactory()
    gone_id = item.id
    item.delete()
    rows = [
        _row("fact", FactFactory(), 1),
        DecisionRow(
            item_type=kind,
            item_id=gone_id,
            reason_code="included",
            rank=1,
            score=None,
            similarity=None,
            cosine_distance=None,
            text_rank=None,
            recency=None,
            tokens=3,
        ),
    ]
    # when it is recorded, then nothing is
    trace_id = trace_record(trace=_trace(), decisions=rows)
    assert not Trace.objects.filter(id=trace_id).exists() and not Decision.objects.exists()


def test_a_tier_cannot_shift_the_fields_of_its_line():
    with pytest.raises(ValueError):
        trace_record(trace=_trace(), decisions=[_row("fact", FactFactory(), 1, tier="facts\tx")])
