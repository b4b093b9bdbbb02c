"""A fact's served days of a month in one row (stats.FactServed), in place of a row per fact and day
(FactServedDay): the facts never served are then a hash anti-join of the project's facts with the facts served in
the period's months, not a probe per fact. The rows are carried over, so a rolled-up project needs no rebuild."""

import django.contrib.postgres.fields
from django.db import migrations, models

from hakimem.rowsecurity import disable_sql, enable_sql

CARRY_OVER = """
INSERT INTO stats_factserved (project_id, fact_id, month, subject_id, days, served)
SELECT project_id, fact_id, date_trunc('month', day, 'UTC')::date, min(subject_id),
       array_agg((day AT TIME ZONE 'UTC')::date ORDER BY day), array_agg(served ORDER BY day)
  FROM stats_factservedday
 GROUP BY 1, 2, 3
"""
CARRY_BACK = """
INSERT INTO stats_factservedday (project_id, fact_id, day, subject_id, served)
SELECT project_id, fact_id, day::timestamp AT TIME ZONE 'UTC', subject_id, n
  FROM stats_factserved, unnest(days, served) AS u(day, n)
"""


class Migration(migrations.Migration):
    dependencies = [
        ("stats", "0003_rollup_read_indexes"),
        ("hakimem", "0002_database_roles"),
    ]

    operations = [
        migrations.CreateModel(
            name="FactServed",
            fields=[
                (
                    "pk",
                    models.CompositePrimaryKey(
                        "project_id", "fact_id", "month", blank=True, editable=False, primary_key=True, serialize=False
                    ),
                ),
                ("project_id", models.CharField(max_length=128)),
                ("fact_id", models.UUIDField()),
                ("month", models.DateField(help_text="its first day")),
                ("subject_id", models.CharField(max_length=128)),
                ("days", django.contrib.postgres.fields.ArrayField(base_field=models.DateField(), size=None)),
                ("served", django.contrib.postgres.fields.ArrayField(base_field=models.IntegerField(), size=None)),
            ],
        ),
        migrations.RunSQL(enable_sql("stats_factserved"), disable_sql("stats_factserved")),
        migrations.RunSQL(CARRY_OVER, CARRY_BACK),
        migrations.DeleteModel(
            name="FactServedDay",
        ),
        migrations.AddIndex(
            model_name="factserved",
            index=models.Index(fields=["project_id", "subject_id"], name="stats_factserved_subject"),
        ),
        migrations.AddIndex(
            model_name="factserved",
            index=models.Index(fields=["project_id", "month"], name="stats_factserved_month"),
        ),
        migrations.AddConstraint(
            model_name="factserved",
            constraint=models.CheckConstraint(
                condition=models.Q(("days__len", models.F("served__len"))), name="stats_factserved_a_count_per_day"
            ),
        ),
    ]
