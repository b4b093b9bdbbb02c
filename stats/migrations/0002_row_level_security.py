"""Row-level security on the statistics' rollup (hakimem/rowsecurity.py): every table by its project."""

from django.db import migrations

from hakimem.rowsecurity import disable_sql, enable_sql

TABLES = ["stats_rollupmark", "stats_hourtotals", "stats_hourlatencies", "stats_subjectday", "stats_factservedday"]
FORWARD = [statement for table in TABLES for statement in enable_sql(table)]
BACKWARD = [statement for table in reversed(TABLES) for statement in disable_sql(table)]


class Migration(migrations.Migration):
    dependencies = [
        ("stats", "0001_initial"),
        ("hakimem", "0002_database_roles"),
    ]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
