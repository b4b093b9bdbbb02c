"""ingest_factwritejob: batches of facts written by the task queue (ingest/models.py), under row security as the
memory tables are (hakimem/rowsecurity.py)."""

import django.contrib.postgres.fields
import uuid
from django.db import migrations, models

from hakimem.rowsecurity import disable_sql, enable_sql


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("hakimem", "0006_key_find_sets_project_statement"),
    ]

    operations = [
        migrations.CreateModel(
            name="FactWriteJob",
            fields=[
                ("id", models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ("project_id", models.CharField(max_length=128)),
                (
                    "subject_ids",
                    django.contrib.postgres.fields.ArrayField(
                        base_field=models.CharField(max_length=128),
                        help_text="The scopes its items write: erasure finds it.",
                        size=None,
                    ),
                ),
                (
                    "status",
                    models.CharField(
                        choices=[("pending", "Pending"), ("done", "Done"), ("failed", "Failed")],
                        default="pending",
                        max_length=16,
                    ),
                ),
                ("actor", models.CharField(max_length=200)),
                ("items", models.JSONField(default=list, help_text="The validated items, until the job has run.")),
                (
                    "results",
                    models.JSONField(default=list, help_text="Once done: per item, its fact's id and write flags."),
                ),
                (
                    "error",
                    models.JSONField(
                        blank=True, help_text="Once failed: the API error the request would have had.", null=True
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("finished_at", models.DateTimeField(blank=True, null=True)),
            ],
            options={
                "indexes": [models.Index(fields=["project_id", "created_at"], name="ingest_writejob_project")],
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(("status__in", ["pending", "done", "failed"])),
                        name="ingest_writejob_status_valid",
                    )
                ],
            },
        ),
        migrations.RunSQL(enable_sql("ingest_factwritejob"), disable_sql("ingest_factwritejob")),
    ]
