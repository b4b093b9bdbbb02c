"""project_id in every key of the memory store's tables, so that the schema can be distributed by project on Citus
(docs/scaling.md), which enforces a primary key, a unique constraint or a foreign key between distributed tables
only when it holds the distribution column.

- Primary keys become (id, project_id), identity blocks' and procedures' too. id leads: every lookup by id alone
  (the ORM's saves, the admin) keeps its index, and (id, project_id) serves the lookups that give both.
  Identity blocks' unique name already holds the project (identity_block_name_unique_in_scope); scope write
  records (facts_scopewrite) are keyed by (project_id, subject_id) since 0011.
- Conflict members get their set's project (backfilled from the sets), and their unique pair holds it.
- The foreign keys inside the store become composite, (x_id, project_id) -> (id, project_id): no row can point
  at another project's row. Django's own constraints, on the id alone, cannot reference a key that id no longer
  is by itself; the fields keep db_constraint=False, and these constraints are deferred to the commit as Django's
  were (an erasure deletes versions that point at each other; the ORM still sets source_event to NULL in Python
  before it deletes an event, as before).
- Conflict members' row security filters on their own project_id instead of a subquery on their set.

Runs on a populated database (the backfill and the new keys read every row; each ALTER TABLE holds its table's
lock while its index is built). Reversible: the way back restores the keys on id alone and Django's constraints
(conflict members' project_id is dropped; it is derived from their sets).
"""

import django.db.models.deletion
from django.db import migrations, models

from hakimem.rowsecurity import disable_sql, enable_child_sql, enable_sql

KEYED = (
    "facts_fact",
    "facts_event",
    "facts_conflictset",
    "facts_conflictmember",
    "facts_consent",
    "facts_identityblock",
    "facts_procedure",
)

# (table, constraint, column, referenced table)
REFERENCES = (
    ("facts_fact", "facts_fact_superseded_by_same_project", "superseded_by_id", "facts_fact"),
    ("facts_fact", "facts_fact_source_event_same_project", "source_event_id", "facts_event"),
    ("facts_conflictmember", "facts_conflictmember_set_same_project", "conflict_set_id", "facts_conflictset"),
    ("facts_conflictmember", "facts_conflictmember_fact_same_project", "fact_id", "facts_fact"),
)

FORWARD = [
    *(f"ALTER TABLE {t} DROP CONSTRAINT {t}_pkey, ADD CONSTRAINT {t}_pkey PRIMARY KEY (id, project_id)" for t in KEYED),
    *(
        f"ALTER TABLE {t} ADD CONSTRAINT {name} FOREIGN KEY ({column}, project_id) REFERENCES {target} (id, project_id)"
        " DEFERRABLE INITIALLY DEFERRED"
        for t, name, column, target in REFERENCES
    ),
    *disable_sql("facts_conflictmember"),
    *enable_sql("facts_conflictmember"),
]
BACKWARD = [
    *disable_sql("facts_conflictmember"),
    *enable_child_sql("facts_conflictmember", parent="facts_conflictset", fk="conflict_set_id"),
    *(f"ALTER TABLE {t} DROP CONSTRAINT {name}" for t, name, _, _ in REFERENCES),
    *(f"ALTER TABLE {t} DROP CONSTRAINT {t}_pkey, ADD CONSTRAINT {t}_pkey PRIMARY KEY (id)" for t in KEYED),
]


class Migration(migrations.Migration):
    dependencies = [
        ("facts", "0011_scope_writes"),
    ]

    operations = [
        # Django's constraints on the id alone go first: they depend on the primary keys replaced below.
        migrations.AlterField(
            model_name="conflictmember",
            name="conflict_set",
            field=models.ForeignKey(
                db_constraint=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="members",
                to="facts.conflictset",
            ),
        ),
        migrations.AlterField(
            model_name="conflictmember",
            name="fact",
            field=models.ForeignKey(
                db_constraint=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="conflict_memberships",
                to="facts.fact",
            ),
        ),
        migrations.AlterField(
            model_name="fact",
            name="source_event",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="facts",
                to="facts.event",
            ),
        ),
        migrations.AlterField(
            model_name="fact",
            name="superseded_by",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="supersedes",
                to="facts.fact",
            ),
        ),
        migrations.AddField(
            model_name="conflictmember",
            name="project_id",
            field=models.CharField(max_length=128, null=True),
        ),
        migrations.RunSQL(
            "UPDATE facts_conflictmember m SET project_id = s.project_id FROM facts_conflictset s"
            " WHERE s.id = m.conflict_set_id",
            migrations.RunSQL.noop,
        ),
        migrations.AlterField(
            model_name="conflictmember",
            name="project_id",
            field=models.CharField(max_length=128),
        ),
        migrations.RemoveConstraint(
            model_name="conflictmember",
            name="conflict_member_unique",
        ),
        migrations.AddConstraint(
            model_name="conflictmember",
            constraint=models.UniqueConstraint(
                fields=("conflict_set", "fact", "project_id"), name="conflict_member_unique"
            ),
        ),
        migrations.RunSQL(FORWARD, BACKWARD),
    ]
