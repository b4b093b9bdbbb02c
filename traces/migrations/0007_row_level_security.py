"""Row-level security on traces (hakimem/rowsecurity.py): traces and their decisions by their project."""

from django.db import migrations

from hakimem.rowsecurity import disable_sql, enable_sql

FORWARD = [
    *enable_sql("traces_trace"),
    *enable_sql("traces_decision"),
]
BACKWARD = [*disable_sql("traces_decision"), *disable_sql("traces_trace")]


class Migration(migrations.Migration):
    dependencies = [
        ("traces", "0006_decision_project_id"),
        ("hakimem", "0002_database_roles"),
    ]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
