"""The statistics' rollup (stats/rollup.py): the overview and the pages read from it give the raw query's numbers,
to the bit, on generated calls over several days, projects and subjects; before and after erasures; and past
the traces' retention, the rollup keeps the history the raw query lost."""

import itertools
import random
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command
from django.db import connection, transaction

from hakimem.rowsecurity import API_ROLE, scope_enter
from privacy.services import consent_revoke, project_erase, subject_erase
from stats import selectors
from stats.models import DayLatencies, FactServed, HourLatencies, HourTotals, RollupMark, SliceTotals, SubjectDay
from stats.rollup import rolled_until, stats_rollup, stats_rollup_forget
from stats.serializers import overview_out
from tests.conftest import OTHER_PROJECT, PROJECT
from tests.facts.factories import FactFactory
from tests.traces.factories import record_call
from traces.models import EmptyReason, ReasonCode, Trace
from traces.services import traces_prune

# Marked citus: the rollup runs on a cluster too (make test-citus).
pytestmark = [pytest.mark.django_db, pytest.mark.citus]

SUBJECTS = ["alice", "bob", "carol", "dan"]
CATEGORIES = ["health", "hobby", "work"]
FIRST_DAY = datetime(2026, 2, 27, tzinfo=UTC)  # across a month: FactServed has a row per fact and month
DAYS = 8
MID_ROLLUP = datetime(2026, 3, 4, 15, 23, tzinfo=UTC)  # rolls up to 4 Mar 15:10 (ROLLUP_LAG before, whole slices)
AFTER_ALL = datetime(2026, 3, 10, tzinfo=UTC)

PERIODS = {
    "whole days": selectors.days_period(FIRST_DAY.date(), (FIRST_DAY + timedelta(days=DAYS - 1)).date()),
    "any instants": selectors.Period(
        datetime(2026, 3, 1, 13, 27, 11, tzinfo=UTC), datetime(2026, 3, 6, 17, 3, tzinfo=UTC)
    ),
    "within an hour": selectors.Period(
        datetime(2026, 3, 2, 10, 5, tzinfo=UTC), datetime(2026, 3, 2, 10, 50, tzinfo=UTC)
    ),
    "before the mark": selectors.Period(
        datetime(2026, 3, 1, 6, 30, tzinfo=UTC), datetime(2026, 3, 3, 22, 15, tzinfo=UTC)
    ),
    "after the mark": selectors.Period(datetime(2026, 3, 4, 15, 30, tzinfo=UTC), datetime(2026, 3, 7, tzinfo=UTC)),
    "past the calls": selectors.Period(datetime(2026, 2, 20, tzinfo=UTC), datetime(2026, 3, 20, 1, 2, 3, tzinfo=UTC)),
    # partial hours at both ends, read from their slices (and a partial slice raw at each end)
    "partial hours": selectors.Period(
        datetime(2026, 3, 2, 10, 7, 30, tzinfo=UTC), datetime(2026, 3, 3, 14, 52, 1, tzinfo=UTC)
    ),
    "across the month": selectors.Period(
        datetime(2026, 2, 28, 13, 0, 1, tzinfo=UTC), datetime(2026, 3, 2, 9, 17, tzinfo=UTC)
    ),
    "slices only": selectors.Period(datetime(2026, 3, 3, 9, 4, tzinfo=UTC), datetime(2026, 3, 3, 9, 56, tzinfo=UTC)),
    "across the mark's hour": selectors.Period(
        datetime(2026, 3, 4, 14, 2, tzinfo=UTC), datetime(2026, 3, 4, 15, 40, tzinfo=UTC)
    ),
}


@pytest.fixture
def calls():
    """Eight days (across a month) of context calls of two projects and four subjects each, at random instants,
    with random latencies (some repeated: the erasers take out one occurrence each), tokens, reason codes, empty
    calls and replays (never counted)."""
    rnd = random.Random(18)
    reasons = itertools.cycle(EmptyReason.values)  # apart from rnd: the calls stay those the tests were written on
    for project in (PROJECT, OTHER_PROJECT):
        for subject in SUBJECTS:
            facts = [
                FactFactory(
                    project_id=project,
                    subject_id=subject,
                    category=CATEGORIES[i % 3],
                    text=f"{subject} fact {i} of {project}.",
                    recorded_from=FIRST_DAY - timedelta(days=30),
                )
                for i in range(7)
            ]
            for day in range(DAYS):
                for _ in range(rnd.randint(2, 6)):
                    at = FIRST_DAY + timedelta(
                        days=day, seconds=rnd.randint(0, 86399), microseconds=rnd.randint(0, 999999)
                    )
                    empty = rnd.random() < 0.15
                    considered = rnd.sample(facts[:6], rnd.randint(1, 5))  # the 7th is never a candidate
                    codes = [
                        ReasonCode.BELOW_RELEVANCE_FLOOR if empty else rnd.choice(list(ReasonCode)) for _ in considered
                    ]
                    latency = float(rnd.randint(5, 9)) if rnd.random() < 0.2 else rnd.uniform(2, 300)
                    trace_id = record_call(
                        at=at,
                        project_id=project,
                        subject_id=subject,
                        latency_ms=latency,
                        used_tokens=0 if empty else rnd.randint(10, 800),
                        empty_reason=next(reasons) if empty else None,
                        facts=list(zip(considered, codes)),
                    )
                    if rnd.random() < 0.1:
                        record_call(
                            at=at + timedelta(minutes=3),
                            project_id=project,
                            subject_id=subject,
                            latency_ms=1000.0,
                            used_tokens=5,
                            facts=[(facts[6], "included")],
                            replay_of=trace_id,
                        )


def payload(overview) -> dict:
    out = overview_out(overview)
    out["open_conflicts"].pop("oldest_age_seconds")  # grows between the two reads
    return out


def everything(project: str, period: selectors.Period, *, rollup: bool) -> dict:
    """Every number the overview and the page show, through the rollup or from the raw queries alone."""
    return {
        "overview": payload(selectors.stats_overview(project_id=project, period=period, rollup=rollup)),
        "per_day": selectors.calls_per_day(project_id=project, period=period, rollup=rollup),
        "subjects": selectors.subjects_by_calls(project_id=project, period=period, limit=100, rollup=rollup),
        "never_served": selectors.facts_never_served(project_id=project, period=period, limit=1000, rollup=rollup),
    }


def assert_rollup_answers_as_raw(project: str = PROJECT) -> None:
    for name, period in PERIODS.items():
        assert everything(project, period, rollup=True) == everything(project, period, rollup=False), name


def rollup_rows(project: str) -> dict:
    return {
        model.__name__: sorted(map(str, model.objects.filter(project_id=project).values_list()))
        for model in (SliceTotals, HourTotals, HourLatencies, DayLatencies, SubjectDay, FactServed)
    }


def test_the_rollup_answers_as_the_raw_query(calls):
    # given a project whose calls are rolled up to the middle of the week
    assert stats_rollup(now=MID_ROLLUP)["slices"] > 0
    assert rolled_until(PROJECT) == datetime(2026, 3, 4, 15, 10, tzinfo=UTC)
    # then every period, whether rolled up, raw or both, gives the raw query's numbers
    assert_rollup_answers_as_raw(PROJECT)
    assert_rollup_answers_as_raw(OTHER_PROJECT)
    # and once everything is rolled up too
    stats_rollup(now=AFTER_ALL)
    assert_rollup_answers_as_raw(PROJECT)
    whole = selectors.stats_overview(project_id=PROJECT, period=PERIODS["whole days"])
    assert whole.context_calls > 50 and whole.latency_p50_ms is not None and whole.facts_never_served >= 4
    # and the injected calls and the empty ones under each reason count every call
    assert whole.calls_injected + sum(whole.empty_reasons.values()) == whole.context_calls
    assert whole.empty_reasons[selectors.NOT_RECORDED] == 0 and min(whole.empty_reasons.values()) >= 0
    assert all(whole.empty_reasons[reason] > 0 for reason in EmptyReason.values)


def test_a_rollup_from_before_the_slices_answers_as_the_raw_query(calls):
    # given a project rolled up before slices were kept (stats/migrations/0006_slices: its slices start at its mark)
    stats_rollup(now=MID_ROLLUP)
    kept_from = datetime(2026, 3, 3, 11, tzinfo=UTC)
    SliceTotals.objects.filter(project_id=PROJECT, slice__lt=kept_from).delete()
    RollupMark.objects.filter(project_id=PROJECT).update(slices_since=kept_from)
    # then the partial hours before it are read raw, those after it from their slices, before and after more runs
    assert_rollup_answers_as_raw(PROJECT)
    stats_rollup(now=AFTER_ALL)
    assert_rollup_answers_as_raw(PROJECT)


def test_the_job_rolls_up_every_slice_once_and_its_hours_and_days_add_up(calls):
    # given the job run every 5 minutes over an afternoon, and once over the same span
    for minutes in range(0, 180, 5):
        stats_rollup(now=MID_ROLLUP + timedelta(minutes=minutes), project_ids=[PROJECT])
    stepwise = rollup_rows(PROJECT)
    stats_rollup_forget(project_id=PROJECT)
    stats_rollup(now=MID_ROLLUP + timedelta(minutes=175), project_ids=[PROJECT])
    # then the rows are the same: the hours and days filled slice by slice hold what one run puts in them
    assert rollup_rows(PROJECT) == stepwise
    assert_rollup_answers_as_raw(PROJECT)


def test_the_job_is_idempotent_and_a_rebuild_gives_the_same_rows(calls):
    stats_rollup(now=MID_ROLLUP)
    stats_rollup(now=AFTER_ALL)
    rows = rollup_rows(PROJECT)
    # run again: nothing more is rolled up
    assert stats_rollup(now=AFTER_ALL)["slices"] == 0 and rollup_rows(PROJECT) == rows
    # forgotten and rebuilt in one go, the rows are those built in two runs
    stats_rollup_forget(project_id=PROJECT)
    assert rolled_until(PROJECT) is None and not HourTotals.objects.filter(project_id=PROJECT).exists()
    call_command("stats_rollup", "--project", PROJECT, stdout=open("/dev/null", "w"))
    assert rollup_rows(PROJECT) == rows


def test_replays_are_not_rolled_up(calls):
    stats_rollup(now=AFTER_ALL)
    replays = Trace.objects.filter(project_id=PROJECT, replay_of__isnull=False).count()
    calls_counted = sum(HourTotals.objects.filter(project_id=PROJECT).values_list("context_calls", flat=True))
    assert replays and calls_counted == Trace.objects.filter(project_id=PROJECT, replay_of__isnull=True).count()
    assert not any(1000.0 in row for row in HourLatencies.objects.values_list("latencies", flat=True))


def test_after_a_subjects_erasure_the_rollup_answers_as_the_raw_query_over_what_remains(calls):
    # given the week rolled up to its middle
    stats_rollup(now=MID_ROLLUP)
    before = payload(selectors.stats_overview(project_id=PROJECT, period=PERIODS["whole days"]))
    # when bob is erased
    receipt = subject_erase(project_id=PROJECT, subject_id="bob")
    # then his rows are gone from the rollup, counted in the receipt, and his share taken out of the totals
    assert receipt["stats_subject_days"] > 0 and receipt["stats_fact_days"] > 0
    assert not SubjectDay.objects.filter(subject_id="bob", project_id=PROJECT).exists()
    assert not FactServed.objects.filter(subject_id="bob", project_id=PROJECT).exists()
    after = payload(selectors.stats_overview(project_id=PROJECT, period=PERIODS["whole days"]))
    assert after["context_calls"] < before["context_calls"]
    assert_rollup_answers_as_raw(PROJECT)
    # and the hours rolled up later hold none of his calls either
    stats_rollup(now=AFTER_ALL)
    assert_rollup_answers_as_raw(PROJECT)
    assert_rollup_answers_as_raw(OTHER_PROJECT)  # bob of the other project is untouched
    assert SubjectDay.objects.filter(subject_id="bob", project_id=OTHER_PROJECT).exists()


def test_after_a_revoked_category_the_rollup_answers_as_the_raw_query(calls):
    stats_rollup(now=MID_ROLLUP)
    health = _facts("alice", "health")
    assert FactServed.objects.filter(project_id=PROJECT, fact_id__in=health).exists()
    # when alice's health facts are erased, with the traces that named them
    _, receipt = consent_revoke(project_id=PROJECT, subject_id="alice", category="health", actor="test", erase=True)
    # then no day they were served is left (their traces' share went out with the traces, whatever outlived
    # its traces is counted in the receipt), and the rollup answers as the raw query over what remains
    assert receipt["traces"] > 0 and receipt["stats_fact_days"] == 0
    assert not FactServed.objects.filter(project_id=PROJECT, fact_id__in=health).exists()
    assert_rollup_answers_as_raw(PROJECT)
    stats_rollup(now=AFTER_ALL)
    assert_rollup_answers_as_raw(PROJECT)


def _facts(subject, category):
    from facts.models import Fact

    return list(
        Fact.objects.filter(project_id=PROJECT, subject_id=subject, category=category).values_list("id", flat=True)
    )


def test_stats_keep_their_history_past_the_traces_retention(calls):
    # given the whole week rolled up
    stats_rollup(now=AFTER_ALL)
    early = selectors.days_period(datetime(2026, 3, 1).date(), datetime(2026, 3, 2).date())
    late = selectors.Period(datetime(2026, 3, 3, 7, 30, tzinfo=UTC), datetime(2026, 3, 7, tzinfo=UTC))
    history = everything(PROJECT, early, rollup=True)
    # when the traces before 3 Mar are pruned
    assert traces_prune(before=datetime(2026, 3, 3, tzinfo=UTC))["traces"] > 0
    # then the raw query has nothing left of the first two days; the rollup still answers as before the prune
    assert selectors.stats_overview(project_id=PROJECT, period=early, rollup=False).context_calls == 0
    assert everything(PROJECT, early, rollup=True) == history
    # and a period after the cutoff is the raw query's
    assert everything(PROJECT, late, rollup=True) == everything(PROJECT, late, rollup=False)
    # an erasure still deletes the subject's rows of the pruned days (its traces' share stays in the hours' totals:
    # their traces are gone, and the totals name no one)
    subject_erase(project_id=PROJECT, subject_id="alice")
    assert not SubjectDay.objects.filter(project_id=PROJECT, subject_id="alice").exists()
    assert everything(PROJECT, late, rollup=True) == everything(PROJECT, late, rollup=False)


def test_a_projects_erasure_deletes_its_rollup(calls):
    stats_rollup(now=AFTER_ALL)
    project_erase(project_id=PROJECT)
    assert rollup_rows(PROJECT) == {
        "SliceTotals": [],
        "HourTotals": [],
        "HourLatencies": [],
        "DayLatencies": [],
        "SubjectDay": [],
        "FactServed": [],
    }
    assert rolled_until(PROJECT) is None and rolled_until(OTHER_PROJECT) is not None


def test_the_api_reads_the_rollup_under_row_security(api, calls):
    # given the API's answer from the raw query (nothing rolled up yet)
    # Whole days: once traces are pruned, the rollup answers for what it holds, whole hours (totals, latencies) and
    # whole days (subjects, facts served); a period's partial first or last day of facts served comes from the raw
    # traces, which the prune deleted.
    params = {"project_id": PROJECT, "since": "2026-03-01T00:00:00Z", "until": "2026-03-07T00:00:00Z"}
    raw = api.get("/v1/stats/overview", params).json()
    # when the week is rolled up, and its traces then pruned (so that only the rollup can answer)
    stats_rollup(now=AFTER_ALL)
    traces_prune(before=AFTER_ALL)
    # then the API, as the project's role, answers the same from the rollup
    rolled = api.get("/v1/stats/overview", params).json()
    for body in (raw, rolled):
        body["open_conflicts"].pop("oldest_age_seconds")
    assert rolled == raw and raw["context_calls"] > 0


def test_the_rollup_tables_are_bound_by_row_security(calls):
    stats_rollup(now=AFTER_ALL)
    # As a request takes them (a SET LOCAL statement, which Citus passes on to the shards), in a transaction.
    with transaction.atomic(), connection.cursor() as cursor:
        before = scope_enter(API_ROLE, OTHER_PROJECT)
        for table in (
            "stats_slicetotals",
            "stats_hourtotals",
            "stats_hourlatencies",
            "stats_daylatencies",
            "stats_subjectday",
            "stats_factserved",
            "stats_rollupmark",
        ):
            cursor.execute(f"SELECT DISTINCT project_id FROM {table}")
            assert cursor.fetchall() == [(OTHER_PROJECT,)], table
        scope_enter(*before)
