"""A day's latencies in one row per bucket (stats.DayLatencies) beside the hourly ones: a period's percentiles
count its whole days there. Built from the hourly rows of the days that closed before the mark's (the job writes
that one when it closes), so a rolled-up project needs no rebuild."""

import django.contrib.postgres.fields
from django.db import migrations, models

from hakimem.rowsecurity import disable_sql, enable_sql

FROM_HOURS = """
INSERT INTO stats_daylatencies (project_id, day, bucket, calls, latencies)
SELECT project_id, day, bucket, count(*), array_agg(v ORDER BY v)
  FROM (SELECT h.project_id, date_trunc('day', h.hour, 'UTC') AS day, h.bucket, unnest(h.latencies) AS v
          FROM stats_hourlatencies h JOIN stats_rollupmark m USING (project_id)
         WHERE h.hour < date_trunc('day', m.rolled_until, 'UTC')) h
 GROUP BY 1, 2, 3
"""


class Migration(migrations.Migration):
    dependencies = [
        ("stats", "0004_facts_served_as_days"),
        ("hakimem", "0002_database_roles"),
    ]

    operations = [
        migrations.CreateModel(
            name="DayLatencies",
            fields=[
                (
                    "pk",
                    models.CompositePrimaryKey(
                        "project_id", "day", "bucket", blank=True, editable=False, primary_key=True, serialize=False
                    ),
                ),
                ("project_id", models.CharField(max_length=128)),
                ("day", models.DateTimeField()),
                ("bucket", models.SmallIntegerField()),
                ("calls", models.IntegerField()),
                ("latencies", django.contrib.postgres.fields.ArrayField(base_field=models.FloatField(), size=None)),
            ],
            options={
                "indexes": [
                    models.Index(
                        fields=["project_id", "day"], include=("bucket", "calls"), name="stats_daylatency_day_calls"
                    ),
                    models.Index(fields=["project_id", "bucket", "day"], name="stats_daylatency_bucket_day"),
                ],
            },
        ),
        migrations.RunSQL(enable_sql("stats_daylatencies"), disable_sql("stats_daylatencies")),
        migrations.RunSQL(FROM_HOURS, migrations.RunSQL.noop),
    ]
