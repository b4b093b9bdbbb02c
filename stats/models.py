"""The statistics' rollup: the traces of closed 5-minute slices summed once by `manage.py stats_rollup`
(stats/rollup.py, every 5 minutes), into rows per slice, hour and day, so that GET /v1/stats/overview reads a
few hundred rows instead of a period's millions of decisions.

A project's rows cover its traces created before its RollupMark.rolled_until; the overview adds the raw query's
answer over the part of the asked period after it (and the partial slice, hour or day at its start), so its
numbers are the raw query's. No context call writes here: the job does, slice by slice, and the erasers take a
subject's share out (stats/rollup.py). project_id leads every key (the distribution column).
"""

from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.db import models

from hakimem.validators import SCOPE_ID_MAX


class RollupMark(models.Model):
    """How far a project's traces are rolled up: every trace created before rolled_until (the end of a 5-minute
    slice) is counted in the rows below, none after it; the rows of the hour and the day it falls in hold their
    traces up to it. SliceTotals exist from slices_since (the slices rolled up before them were not kept)."""

    project_id = models.CharField(max_length=SCOPE_ID_MAX, primary_key=True)
    rolled_until = models.DateTimeField()
    slices_since = models.DateTimeField()


class _Totals(models.Model):
    """What a period's row of context calls holds; SliceTotals and HourTotals differ by their period only."""

    project_id = models.CharField(max_length=SCOPE_ID_MAX)
    context_calls = models.IntegerField()
    calls_injected = models.IntegerField(help_text="calls that served something (used_tokens > 0)")
    used_tokens = models.BigIntegerField()
    empty_reasons = models.JSONField(default=dict, help_text="{empty reason: calls}")
    decisions = models.JSONField(default=dict, help_text="{reason code: decisions}")

    class Meta:
        abstract = True


class _Latencies(models.Model):
    """One latency bucket of a period; HourLatencies and DayLatencies differ by their period only."""

    project_id = models.CharField(max_length=SCOPE_ID_MAX)
    bucket = models.SmallIntegerField()
    calls = models.IntegerField()
    latencies = ArrayField(models.FloatField())

    class Meta:
        abstract = True


class SliceTotals(_Totals):
    """HourTotals of one 5-minute slice: what the overview reads for the partial hours at its period's ends, so
    that the raw query's part of a period (its decisions, probed per trace) is minutes, not an hour."""

    pk = models.CompositePrimaryKey("project_id", "slice")
    slice = models.DateTimeField()


class HourTotals(_Totals):
    """The context calls of one UTC hour of a project (replays left out): what the overview sums."""

    pk = models.CompositePrimaryKey("project_id", "hour")
    hour = models.DateTimeField()


class HourLatencies(_Latencies):
    """The latencies of one hour's context calls that fall in one bucket (LATENCY_BUCKET_SQL, ~1.6% wide), every
    value kept, sorted: a percentile is found by counting per bucket, then reading the one bucket that holds
    the rank, so it is the raw query's percentile_cont to the bit."""

    pk = models.CompositePrimaryKey("project_id", "hour", "bucket")
    hour = models.DateTimeField()

    class Meta:
        indexes = [
            # the calls per bucket over a period, without reading the values (an index-only scan)
            models.Index(name="stats_latency_hour_calls", fields=["project_id", "hour"], include=["bucket", "calls"]),
            # the values of one bucket over a period, read for the rank a percentile falls on
            models.Index(name="stats_latency_bucket_hour", fields=["project_id", "bucket", "hour"]),
        ]


class DayLatencies(_Latencies):
    """HourLatencies of a whole UTC day, merged by the job when the day closes: a period's percentiles count its
    whole days here (30 days x ~80 buckets) and read the hourly rows only for its partial days (the day of the
    mark among them)."""

    pk = models.CompositePrimaryKey("project_id", "day", "bucket")
    day = models.DateTimeField()

    class Meta:
        indexes = [
            models.Index(name="stats_daylatency_day_calls", fields=["project_id", "day"], include=["bucket", "calls"]),
            models.Index(name="stats_daylatency_bucket_day", fields=["project_id", "bucket", "day"]),
        ]


class SubjectDay(models.Model):
    """One subject's context calls of one UTC day: the pages' subjects with the most calls."""

    pk = models.CompositePrimaryKey("project_id", "day", "subject_id")
    project_id = models.CharField(max_length=SCOPE_ID_MAX)
    day = models.DateTimeField()
    subject_id = models.CharField(max_length=SCOPE_ID_MAX)
    context_calls = models.IntegerField()
    calls_injected = models.IntegerField(help_text="calls that served something (used_tokens > 0)")

    class Meta:
        indexes = [models.Index(name="stats_subjectday_subject", fields=["project_id", "subject_id"])]


class FactServed(models.Model):
    """The UTC days of a month a fact was served (an `included` decision), sorted, and how many times on each
    (`served[i]` on `days[i]`): a row per fact and month, so the facts never served in a period are one hash
    anti-join of the project's facts with the facts served in its months, each row answered by two binary searches
    (width_bucket) in its days. The counts let an erasure take out some of a day's traces. A month and not the
    whole history per row: the job rewrites the row of each fact served in a slice, every 5 minutes, and a
    month's arrays stay small (no TOAST) however long the history."""

    pk = models.CompositePrimaryKey("project_id", "fact_id", "month")
    project_id = models.CharField(max_length=SCOPE_ID_MAX)
    fact_id = models.UUIDField()
    month = models.DateField(help_text="its first day")
    subject_id = models.CharField(max_length=SCOPE_ID_MAX)
    days = ArrayField(models.DateField())
    served = ArrayField(models.IntegerField())

    class Meta:
        indexes = [
            models.Index(name="stats_factserved_subject", fields=["project_id", "subject_id"]),
            # the facts served in a period's months
            models.Index(name="stats_factserved_month", fields=["project_id", "month"]),
        ]
        constraints = [
            models.CheckConstraint(
                name="stats_factserved_a_count_per_day",
                condition=models.Q(days__len=models.F("served__len")),
            )
        ]
