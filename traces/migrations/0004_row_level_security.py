"""Row-level security on traces (hakimem/rowsecurity.py): traces by their project, decisions by their trace.

A decision's insert is not checked against its trace: the trace writer inserts a trace and its decisions in
one statement, and a policy's subquery cannot see a row the same statement inserts. Reading, changing and
deleting decisions is checked.
"""
from django.db import migrations

from hakimem.rowsecurity import disable_sql, enable_child_sql, enable_sql

FORWARD = [
    *enable_sql("traces_trace"),
    *enable_child_sql("traces_decision", parent="traces_trace", fk="trace_id", check_inserts=False),
]
BACKWARD = [*disable_sql("traces_decision"), *disable_sql("traces_trace")]


class Migration(migrations.Migration):

    dependencies = [
        ("traces", "0003_decision_indexes_without_duplicates"),
        ("hakimem", "0002_database_roles"),
    ]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
