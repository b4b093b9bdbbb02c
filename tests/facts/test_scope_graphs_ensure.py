"""Scopes that grew large get their own hnsw graph: `manage.py scope_graph ensure`, and the nightly
consolidation over every project (facts/scope_graphs.py). CREATE INDEX CONCURRENTLY runs outside a transaction:
these tests are transactional."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from context.consolidation import consolidate
from facts.models import FactStatus
from facts.scope_graphs import scope_graph_drop, scope_graph_list, scope_graph_name
from tests.conftest import OTHER_PROJECT, PROJECT
from tests.facts.factories import FactFactory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def scopes():
    """alice: 6 active facts; bob: 5 active and 3 retracted; carol, in another project: 6 active."""
    for i in range(6):
        FactFactory(subject_id="alice", text=f"Alice owns painting number {i}.")
        FactFactory(project_id=OTHER_PROJECT, subject_id="carol", text=f"Carol owns painting number {i}.")
    for i in range(5):
        FactFactory(subject_id="bob", text=f"Bob owns painting number {i}.")
    for i in range(3):
        FactFactory(
            subject_id="bob",
            text=f"Bob sold painting number {i}.",
            status=FactStatus.RETRACTED,
            recorded_to=timezone.now(),
        )
    yield
    for project_id, subject_id in [(PROJECT, "alice"), (PROJECT, "bob"), (OTHER_PROJECT, "carol")]:
        scope_graph_drop(project_id=project_id, subject_id=subject_id)


def graphs() -> set[str]:
    return {name for name, _, _ in scope_graph_list()}


def test_ensure_gives_a_graph_to_every_scope_of_enough_active_facts_and_only_to_them(scopes):
    out = StringIO()
    call_command("scope_graph", "ensure", "--min-facts", "6", stdout=out)
    assert graphs() == {scope_graph_name(PROJECT, "alice"), scope_graph_name(OTHER_PROJECT, "carol")}
    assert "2 scope(s) of 6 active facts or more without a graph" in out.getvalue()

    # a second run finds nothing left to do
    again = StringIO()
    call_command("scope_graph", "ensure", "--min-facts", "6", stdout=again)
    assert again.getvalue() == "0 scope(s) of 6 active facts or more without a graph\n"


def test_a_dry_run_lists_the_scopes_and_creates_nothing(scopes):
    out = StringIO()
    call_command("scope_graph", "ensure", "--min-facts", "5", "--dry-run", stdout=out)
    assert graphs() == set()
    assert out.getvalue().splitlines() == [
        f"would create the graph of {PROJECT} / alice (6 active facts)",
        f"would create the graph of {OTHER_PROJECT} / carol (6 active facts)",
        f"would create the graph of {PROJECT} / bob (5 active facts)",
        "3 scope(s) of 5 active facts or more without a graph (dry run)",
    ]


def test_ensure_takes_its_size_from_the_settings(scopes, settings):
    settings.HAKI_SCOPE_GRAPH_MIN_FACTS = 5
    call_command("scope_graph", "ensure", stdout=StringIO())
    assert len(graphs()) == 3


def test_a_size_below_one_is_refused(scopes):
    with pytest.raises(CommandError, match="--min-facts"):
        call_command("scope_graph", "ensure", "--min-facts", "0")


def test_the_nightly_consolidation_builds_the_graphs_of_grown_scopes(scopes, settings):
    settings.HAKI_SCOPE_GRAPH_MIN_FACTS = 6
    assert consolidate(dry_run=True).scope_graphs_created == 2 and graphs() == set()
    assert consolidate().scope_graphs_created == 2
    assert graphs() == {scope_graph_name(PROJECT, "alice"), scope_graph_name(OTHER_PROJECT, "carol")}
    assert consolidate().scope_graphs_created == 0


def test_a_consolidation_of_one_project_or_with_the_setting_off_builds_none(scopes, settings):
    settings.HAKI_SCOPE_GRAPH_MIN_FACTS = 6
    assert consolidate(project_id=PROJECT).scope_graphs_created == 0
    settings.HAKI_SCOPE_GRAPH_MIN_FACTS = 0
    assert consolidate().scope_graphs_created == 0
    assert graphs() == set()


def test_a_scope_erased_while_its_graph_is_built_keeps_no_graph(scopes, monkeypatch):
    # given an erasure of alice that runs just as her graph is being built (after the erasure looked for a graph)
    from facts import scope_graphs
    from privacy.services import subject_erase

    build = scope_graphs.scope_graph_create

    def build_during_an_erasure(*, project_id, subject_id):
        if subject_id == "alice":
            subject_erase(project_id=project_id, subject_id=subject_id)
        return build(project_id=project_id, subject_id=subject_id)

    monkeypatch.setattr(scope_graphs, "scope_graph_create", build_during_an_erasure)

    # when the scopes of 6 facts get their graphs
    scope_graphs.scope_graphs_ensure(min_facts=6)

    # then no graph names alice (its definition would hold her subject id); carol's was built
    assert graphs() == {scope_graph_name(OTHER_PROJECT, "carol")}


def test_the_largest_scopes_get_their_own_full_text_index_which_erasure_drops(scopes, settings):
    from facts.scope_graphs import SCOPE_TEXT_INDEX_PREFIX, scope_graph_list, scope_text_index_name
    from privacy.services import subject_erase
    from tests.conftest import rows_mentioning

    def text_indexes():
        return {name for name, _, _ in scope_graph_list(SCOPE_TEXT_INDEX_PREFIX)}

    # given the largest scopes at 6 facts, graphs at 100 (none)
    settings.HAKI_SCOPE_GRAPH_MIN_FACTS = 100
    settings.HAKI_SCOPE_TEXT_INDEX_MIN_FACTS = 6
    out = StringIO()
    call_command("scope_graph", "ensure", stdout=out)
    assert text_indexes() == {scope_text_index_name(PROJECT, "alice"), scope_text_index_name(OTHER_PROJECT, "carol")}
    assert graphs() == set() and "created the full-text index of proj-a / alice (6 active facts" in out.getvalue()
    assert consolidate().scope_text_indexes_created == 0  # nothing left to do

    # when alice is erased, her index (whose predicate names her) goes with her scope; carol keeps hers
    receipt = subject_erase(project_id=PROJECT, subject_id="alice")
    assert receipt["scope_graphs"] == 1
    assert text_indexes() == {scope_text_index_name(OTHER_PROJECT, "carol")}
    assert not [k for k in rows_mentioning("'alice'") if k.startswith("index")]
