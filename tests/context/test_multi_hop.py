"""Multi-hop expansion: facts linked to the served ones only by a name, within the budget held back for it."""

import pytest
from django.db import connection
from django.utils import timezone

from facts.models import Fact
from tests.conftest import PROJECT
from tests.context.calls import ask, decisions
from tests.facts.factories import ConflictSetFactory, EventFactory, FactFactory

pytestmark = pytest.mark.django_db


def test_multi_hop_brings_a_fact_linked_only_by_a_name(api):
    for i in range(150):
        FactFactory(text=f"Marie wrote note {i} about her brother in the family diary.")
    FactFactory(text="Marie's brother is called Julien.")
    julien = FactFactory(text="Julien teaches chemistry in Montreal.")
    packet = ask(api, "Who is Marie's brother?", budget=4000)
    served = {f["id"]: f for f in packet["facts"]}
    assert served[str(julien.id)]["reason_code"] == "multi_hop_expansion"
    row = decisions(packet)[str(julien.id)]
    assert row.reason_code == "multi_hop_expansion" and row.entity == "Julien" and row.decision == "included"


def test_budget_multi_hop_leaves_goes_back_to_the_ranking(api):
    for i in range(30):
        FactFactory(text=f"Alice collects vintage stamps from country number {i}.")
    packet = ask(api, "Which stamps does Alice collect?", budget=100)
    assert all(f["reason_code"] == "included" for f in packet["facts"])  # no entity to hop to
    assert packet["used_tokens"] > 90  # the held-back share was spent on the ranking, not wasted


def test_multi_hop_ignores_the_floor(api, settings):
    FactFactory(text="Marie's brother is called Julien.")
    julien = FactFactory(text="Julien teaches chemistry in Montreal.")
    settings.HAKI_RECALL_MAX_DISTANCE = 0.75  # keeps the first fact, drops Julien's on similarity
    packet = ask(api, "Who is Marie's brother?")
    assert decisions(packet)[str(julien.id)].reason_code == "multi_hop_expansion"


def test_multi_hop_only_within_the_budget(api):
    FactFactory(text="Marie's brother is called Julien.")
    for i in range(100):
        FactFactory(text=f"Marie wrote note {i} about her brother in the family diary.")
    julien = FactFactory(text="Julien teaches chemistry in Montreal.")
    packet = ask(
        api, "Who is Marie's brother?", budget=10
    )  # 8 for the first pass, 2 held for multi-hop; Julien's fact needs 9
    assert str(julien.id) not in {f["id"] for f in packet["facts"]}
    assert packet["used_tokens"] <= 10
    assert all(d.reason_code != "multi_hop_expansion" for d in decisions(packet).values())


def test_multi_hop_within_a_whole_scope_finds_what_its_statement_finds(monkeypatch):
    """Where the candidates hold every active fact of the scope, multi-hop is answered from them (multi_hop.
    multi_hop_within): the same facts per entity, in the same order, as the multi-hop statement, with its exclusions
    (the settled ids, an open conflict, expired volatility) and its cut at MULTI_HOP_MAX_PER_ENTITY, newest first and
    ties by id."""
    from context import multi_hop, retrieval
    from facts.selectors import volatility_cutoffs
    from facts.writes import fact_retract
    from hakimem.embeddings import get_embedder

    monkeypatch.setattr(retrieval, "whole_scope_expected", lambda lookup, dense_k: True)
    now = timezone.now()
    same_time = now - timezone.timedelta(days=3)
    for i in range(9):  # more than the cut, three of them written at the same instant
        FactFactory(
            text=f"Julien fixed bicycle number {i} in the garage.",
            recorded_from=same_time if i < 3 else now - timezone.timedelta(days=i + 5),
        )
    for i in range(3):
        FactFactory(text=f"Montreal hosts festival number {i}.", recorded_from=now - timezone.timedelta(days=i))
    old = now - timezone.timedelta(days=400)
    FactFactory(text="Julien once lived in Montreal.", volatility="volatile", recorded_from=old, last_confirmed_at=old)
    ConflictSetFactory(
        members=[FactFactory(text="Julien owns a red bicycle."), FactFactory(text="Julien owns no bicycle.")]
    )
    FactFactory(text="Alice keeps bees.")
    EventFactory(text="Julien visited Montreal.")
    query = "Who fixes bicycles?"
    lookup = retrieval.lookup_for(
        project_id=PROJECT, subject_id="alice", query=query, now=now, cutoffs=volatility_cutoffs(now)
    )
    facts, _, whole = retrieval.candidates_together(
        lookup, qvec=get_embedder().embed_query(query, project_id=lookup.project_id)
    )
    assert whole and len(facts) == 16
    settled = [c.id for c in facts if "number 4" in c.text or "number 1." in c.text]
    entities = ["Julien", "Montreal"]
    within = multi_hop.multi_hop_within(lookup, entities=entities, scope_facts=facts, exclude_ids=settled)
    found = multi_hop.multi_hop_candidates(lookup, entities=entities, exclude_ids=settled)
    assert [(e, c.id) for e, c in within] == [(e, c.id) for e, c in found]
    assert [e for e, _ in found] == ["Julien"] * multi_hop.MULTI_HOP_MAX_PER_ENTITY + ["Montreal"] * 2
    # A fact retracted after the candidates were read is not brought back, by either.
    fact_retract(fact=Fact.objects.get(id=found[0][1].id))
    within = multi_hop.multi_hop_within(lookup, entities=entities, scope_facts=facts, exclude_ids=settled)
    found_now = multi_hop.multi_hop_candidates(lookup, entities=entities, exclude_ids=settled)
    assert [(e, c.id) for e, c in within] == [(e, c.id) for e, c in found_now]
    assert found[0][1].id not in {c.id for _, c in found_now}


def test_a_small_scopes_call_asks_multi_hop_of_its_candidates(api, settings):
    """A plain call in a scope read whole asks which of its candidates name the entities, not the branches' statement,
    and serves the fact linked only by a name all the same."""
    from django.test.utils import CaptureQueriesContext

    FactFactory(text="Marie's brother is called Julien.")
    julien = FactFactory(text="Julien teaches chemistry in Montreal.")
    settings.HAKI_RECALL_MAX_DISTANCE = 0.75  # Julien's fact is a candidate under the floor: multi-hop's to serve
    with CaptureQueriesContext(connection) as queries:
        packet = ask(api, "Who is Marie's brother?")
    statements = [q["sql"] for q in queries.captured_queries]
    assert any("AS names_0" in sql for sql in statements)
    assert not any("ORDER BY f.recorded_from DESC, f.id DESC" in sql for sql in statements)  # no multi-hop branch
    assert decisions(packet)[str(julien.id)].reason_code == "multi_hop_expansion"
