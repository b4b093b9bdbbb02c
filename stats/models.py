"""The statistics' rollup: the traces of closed hours summed once by `manage.py stats_rollup` (stats/rollup.py),
so that GET /v1/stats/overview reads a few hundred rows instead of a period's millions of decisions.

A project's rows cover its traces created before its RollupMark.rolled_until (a whole hour); the overview adds
the raw query's answer over the part of the asked period after it (and the partial hour or day at its start),
so its numbers are the raw query's. No context call writes here: the job does, hour by hour, and the erasers
take a subject's share out (stats/rollup.py). project_id leads every key (the distribution column).
"""
from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.db import models

from hakimem.validators import SCOPE_ID_MAX


class RollupMark(models.Model):
    """How far a project's traces are rolled up: every trace created before rolled_until is counted in the
    rows below, none after it."""

    project_id = models.CharField(max_length=SCOPE_ID_MAX, primary_key=True)
    rolled_until = models.DateTimeField()


class HourTotals(models.Model):
    """The context calls of one UTC hour of a project (replays left out): what the overview sums."""

    pk = models.CompositePrimaryKey("project_id", "hour")
    project_id = models.CharField(max_length=SCOPE_ID_MAX)
    hour = models.DateTimeField()
    context_calls = models.IntegerField()
    calls_with_facts = models.IntegerField()
    used_tokens = models.BigIntegerField()
    empty_reasons = models.JSONField(default=dict, help_text="{empty reason: calls}")
    decisions = models.JSONField(default=dict, help_text="{reason code: decisions}")


class HourLatencies(models.Model):
    """The latencies of one hour's context calls that fall in one bucket (LATENCY_BUCKET_SQL, ~3% wide), every
    value kept, sorted: a percentile is found by counting per bucket, then reading the one bucket that holds
    the rank, so it is the raw query's percentile_cont to the bit."""

    pk = models.CompositePrimaryKey("project_id", "hour", "bucket")
    project_id = models.CharField(max_length=SCOPE_ID_MAX)
    hour = models.DateTimeField()
    bucket = models.SmallIntegerField()
    calls = models.IntegerField()
    latencies = ArrayField(models.FloatField())

    class Meta:
        indexes = [
            # the calls per bucket over a period, without reading the values (an index-only scan)
            models.Index(name="stats_latency_hour_calls", fields=["project_id", "hour"], include=["bucket", "calls"]),
            # the values of one bucket over a period, read for the rank a percentile falls on
            models.Index(name="stats_latency_bucket_hour", fields=["project_id", "bucket", "hour"]),
        ]


class SubjectDay(models.Model):
    """One subject's context calls of one UTC day: the pages' subjects with the most calls."""

    pk = models.CompositePrimaryKey("project_id", "day", "subject_id")
    project_id = models.CharField(max_length=SCOPE_ID_MAX)
    day = models.DateTimeField()
    subject_id = models.CharField(max_length=SCOPE_ID_MAX)
    context_calls = models.IntegerField()
    calls_with_facts = models.IntegerField()

    class Meta:
        indexes = [models.Index(name="stats_subjectday_subject", fields=["project_id", "subject_id"])]


class FactServedDay(models.Model):
    """A fact served (an `included` decision) on one UTC day, and how many times: facts never served are the
    active ones without a row in the period. The count lets an erasure take out some of the day's traces."""

    pk = models.CompositePrimaryKey("project_id", "fact_id", "day")
    project_id = models.CharField(max_length=SCOPE_ID_MAX)
    fact_id = models.UUIDField()
    day = models.DateTimeField()
    subject_id = models.CharField(max_length=SCOPE_ID_MAX)
    served = models.IntegerField()

    class Meta:
        indexes = [
            models.Index(name="stats_factservedday_subject", fields=["project_id", "subject_id"]),
            # the facts served in a period, read whole (index-only) for the facts never served
            models.Index(name="stats_factservedday_day", fields=["project_id", "day"], include=["fact_id"]),
        ]
