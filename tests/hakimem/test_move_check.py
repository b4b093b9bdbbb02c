"""scripts/check_move.py's snapshots (bench/move_check.py), which docs/scaling.md's move from one server to a
cluster was checked with: two snapshots of the same data agree, and a changed row or a changed packet is named."""

from facts.models import Fact
from bench.move_check import compare, snapshot
from tests.conftest import OTHER_PROJECT, PROJECT
from tests.context.calls import ask
from tests.facts.factories import EventFactory, FactFactory


def _memory(api, other_api):
    FactFactory(text="Alice keeps bees in her garden.")
    FactFactory(text="Alice's bees make heather honey.")
    EventFactory(text="Alice sold honey at the market.")
    FactFactory(project_id=OTHER_PROJECT, subject_id="bob", text="Bob keeps goats.")
    ask(api, "What does Alice keep?")
    response = other_api.post(
        "/v1/context", {"project_id": OTHER_PROJECT, "subject_id": "bob", "query": "goats"}, format="json"
    )
    assert response.status_code == 200


def test_two_snapshots_of_the_same_data_agree(api, other_api):
    _memory(api, other_api)

    before, after = snapshot(calls_per_project=5), snapshot(calls_per_project=5)

    assert compare(before, after) == []
    assert before["tables"]["facts_fact"]["by_project"] == {OTHER_PROJECT: 1, PROJECT: 2}
    assert {c["project_id"] for c in before["calls"]} == {PROJECT, OTHER_PROJECT}
    assert any(c["facts"] for c in before["calls"])


def test_a_changed_row_and_the_packet_it_changes_are_named(api, other_api):
    _memory(api, other_api)
    before = snapshot(calls_per_project=5)

    Fact.objects.filter(project_id=PROJECT, text__contains="heather").delete()
    after = snapshot(calls_per_project=5)

    differences = compare(before, after)
    assert "facts_fact: rows 3 before, 2 after" in differences
    assert any(line.startswith("call ") and f"({PROJECT}): facts differs" in line for line in differences)
    assert not any(f"({OTHER_PROJECT})" in line for line in differences)
