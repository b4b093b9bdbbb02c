"""Latency buckets twice as fine (stats.rollup.LATENCY_BUCKET_SQL: 64 per e-fold, was 32): the rows of
stats_hourlatencies and stats_daylatencies regrouped by the new bucket of each value, so a rolled-up project
needs no rebuild."""

from django.db import migrations


def regroup(table: str, period: str, per_e_fold: int) -> list[str]:
    return [
        f"CREATE TEMPORARY TABLE latency_values ON COMMIT DROP AS SELECT project_id, {period}, unnest(latencies) AS v FROM {table}",
        f"DELETE FROM {table}",
        f"""INSERT INTO {table} (project_id, {period}, bucket, calls, latencies)
            SELECT project_id, {period}, floor(ln(least(greatest(v, 0.001), 1e9)) * {per_e_fold})::int2, count(*),
                   array_agg(v ORDER BY v)
              FROM latency_values GROUP BY 1, 2, 3""",
        "DROP TABLE latency_values",
    ]


class Migration(migrations.Migration):
    dependencies = [
        ("stats", "0006_slices"),
    ]

    operations = [
        migrations.RunSQL(
            regroup("stats_hourlatencies", "hour", 64) + regroup("stats_daylatencies", "day", 64),
            regroup("stats_hourlatencies", "hour", 32) + regroup("stats_daylatencies", "day", 32),
        ),
    ]
