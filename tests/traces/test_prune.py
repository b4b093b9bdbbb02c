"""Trace retention: `manage.py prune_traces` deletes the traces older than HAKI_TRACE_RETENTION_DAYS (or
--days) with their decisions, batch by batch, and nothing else."""

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from tests.conftest import OTHER_PROJECT, PROJECT
from tests.facts.factories import EventFactory, FactFactory
from tests.traces.factories import record_call
from traces.models import Decision, Trace

pytestmark = pytest.mark.django_db


@pytest.fixture
def calls():
    """Context calls of two projects, 100, 40 and 10 days old: each with two fact decisions and one episode."""
    now = timezone.now()
    made = {}
    for project in (PROJECT, OTHER_PROJECT):
        # a trace's decisions name items of its own project (the trace writer checks it)
        fact_a, fact_b = FactFactory(project_id=project), FactFactory(project_id=project)
        event = EventFactory(project_id=project)
        for age in (100, 100, 100, 40, 10):
            trace_id = record_call(
                at=now - timedelta(days=age),
                project_id=project,
                facts=[(fact_a, "included"), (fact_b, "over_budget")],
                episodes=[(event, "included")],
            )
            made.setdefault(age, []).append(trace_id)
    return made


def prune(*args) -> str:
    out = StringIO()
    call_command("prune_traces", *args, stdout=out)
    return out.getvalue()


def test_prunes_traces_older_than_the_retention_in_batches(settings, calls):
    # given a retention of 30 days
    settings.HAKI_TRACE_RETENTION_DAYS = 30

    # when the traces are pruned two per transaction
    out = prune("--batch-size", "2")

    # then the calls of 100 and 40 days are gone with their decisions, in every project; the recent ones stay whole
    assert set(Trace.objects.values_list("id", flat=True)) == set(calls[10])
    assert Decision.objects.count() == 2 * 3
    assert set(Decision.objects.values_list("trace_id", flat=True)) == set(calls[10])
    # 4 old traces per project: batches of 2, 2 and an empty look
    assert out.startswith("deleted 8 traces and 24 decisions recorded before ") and out.endswith(" in 4 batches\n")


def test_days_overrides_the_setting(settings, calls):
    settings.HAKI_TRACE_RETENTION_DAYS = 30
    out = prune("--days", "60")
    assert set(Trace.objects.values_list("id", flat=True)) == set(calls[10] + calls[40])
    assert "deleted 6 traces and 18 decisions" in out


def test_a_dry_run_counts_and_deletes_nothing(settings, calls):
    settings.HAKI_TRACE_RETENTION_DAYS = 30
    out = prune("--dry-run")
    assert out.startswith("would delete 8 traces and 24 decisions recorded before ")
    assert Trace.objects.count() == 10 and Decision.objects.count() == 30


def test_a_retention_of_0_keeps_every_trace(settings, calls):
    settings.HAKI_TRACE_RETENTION_DAYS = 0
    assert prune() == "retention is 0 days (keep forever): nothing pruned\n"
    assert Trace.objects.count() == 10 and Decision.objects.count() == 30


@pytest.mark.parametrize("args", [("--days", "-1"), ("--days", "30", "--batch-size", "0")])
def test_bad_arguments_are_refused_and_nothing_is_deleted(calls, args):
    with pytest.raises(CommandError):
        prune(*args)
    assert Trace.objects.count() == 10
