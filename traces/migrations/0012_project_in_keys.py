"""project_id in the primary keys of traces and decisions, as in the memory store (facts/migrations/0012_project_in_keys,
docs/scaling.md): Citus enforces a key of a distributed table only when it holds the distribution column. id leads,
so lookups by id alone keep their index. No foreign key to change: decisions hold none in the database (their
trace, fact, event, procedure and identity block are checked by the trace writer, traces/services.py). Access
counts (traces_itemaccess, 0011) are keyed by (project_id, subject_id, item_id) already. Reversible."""

from django.db import migrations

KEYED = ("traces_trace", "traces_decision")


class Migration(migrations.Migration):
    dependencies = [
        ("traces", "0011_item_access"),
    ]

    operations = [
        migrations.RunSQL(
            [
                f"ALTER TABLE {t} DROP CONSTRAINT {t}_pkey, ADD CONSTRAINT {t}_pkey PRIMARY KEY (id, project_id)"
                for t in KEYED
            ],
            [f"ALTER TABLE {t} DROP CONSTRAINT {t}_pkey, ADD CONSTRAINT {t}_pkey PRIMARY KEY (id)" for t in KEYED],
        ),
    ]
