"""facts_scopewrite: the last transaction that changed what a scope's context call reads (facts.models.ScopeWrite),
kept by statement triggers on the memory tables, for read-your-writes on a read replica (hakimem/db_router.py).

One trigger per table and kind of statement (PostgreSQL allows a transition table on one event only); each
upserts the scopes its statement touched, once per statement whatever its number of rows, in key order (two
transactions lock the same rows in the same order). A statement of a transaction that already recorded the
scope changes nothing. No backfill: a scope nobody wrote since this migration has no row on the primary nor on
any replica that replayed this migration, and "no row" on both sides is a match.
"""

from django.db import migrations, models

from hakimem.rowsecurity import disable_sql, enable_sql

# Identity blocks and procedures have subject_id '' when they are project-wide: their writes then record the
# project's row, which every scope of the project compares too.
SCOPE_TABLES = (
    "facts_fact",
    "facts_event",
    "facts_conflictset",
    "facts_consent",
    "facts_identityblock",
    "facts_procedure",
)

_UPSERT = """
    INSERT INTO facts_scopewrite AS w (project_id, subject_id, written_by)
    SELECT s.project_id, s.subject_id, pg_current_xact_id()::text::bigint
      FROM (SELECT DISTINCT c.project_id, {subject} AS subject_id FROM changed c) s
     ORDER BY s.project_id, s.subject_id
    ON CONFLICT (project_id, subject_id) DO UPDATE SET written_by = EXCLUDED.written_by
     WHERE w.written_by <> EXCLUDED.written_by;
    RETURN NULL;"""

FUNCTIONS = f"""
CREATE FUNCTION facts_scope_written() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN{_UPSERT.format(subject="c.subject_id")}
END $$;
CREATE FUNCTION facts_project_written() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN{_UPSERT.format(subject="''")}
END $$;
"""


def _triggers(table: str, function: str) -> list[str]:
    return [
        f"CREATE TRIGGER scope_written_{event.lower()} AFTER {event} ON {table} REFERENCING {kind} TABLE AS changed"
        f" FOR EACH STATEMENT EXECUTE FUNCTION {function}()"
        for event, kind in (("INSERT", "NEW"), ("UPDATE", "NEW"), ("DELETE", "OLD"))
    ]


def _drop_triggers(table: str) -> list[str]:
    return [f"DROP TRIGGER IF EXISTS scope_written_{event} ON {table}" for event in ("insert", "update", "delete")]


FORWARD = [
    *enable_sql("facts_scopewrite"),
    FUNCTIONS,
    *[sql for table in SCOPE_TABLES for sql in _triggers(table, "facts_scope_written")],
    *_triggers("facts_project", "facts_project_written"),
]
BACKWARD = [
    *[sql for table in (*SCOPE_TABLES, "facts_project") for sql in _drop_triggers(table)],
    "DROP FUNCTION IF EXISTS facts_scope_written()",
    "DROP FUNCTION IF EXISTS facts_project_written()",
    *disable_sql("facts_scopewrite"),
]


class Migration(migrations.Migration):
    dependencies = [
        ("facts", "0010_identity_blocks_and_procedures"),
    ]

    operations = [
        migrations.CreateModel(
            name="ScopeWrite",
            fields=[
                (
                    "pk",
                    models.CompositePrimaryKey(
                        "project_id", "subject_id", blank=True, editable=False, primary_key=True, serialize=False
                    ),
                ),
                ("project_id", models.CharField(max_length=128)),
                ("subject_id", models.CharField(blank=True, max_length=128)),
                ("written_by", models.BigIntegerField()),
            ],
        ),
        migrations.RunSQL(FORWARD, BACKWARD),
    ]
