"""Decisions about procedures and identity blocks (issue 15), and the tier a tiered call packed an item for."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("facts", "0010_identity_blocks_and_procedures"),
        ("traces", "0008_trace_replay_inputs"),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="decision",
            name="decision_one_item",
        ),
        migrations.AddField(
            model_name="decision",
            name="identity_block",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.DO_NOTHING,
                related_name="decisions",
                to="facts.identityblock",
            ),
        ),
        migrations.AddField(
            model_name="decision",
            name="procedure",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.DO_NOTHING,
                related_name="decisions",
                to="facts.procedure",
            ),
        ),
        migrations.AddField(
            model_name="decision",
            name="tier",
            field=models.CharField(
                blank=True,
                db_default="",
                default="",
                help_text="The section of a tiered call the item was packed for; empty for a plain call.",
                max_length=16,
            ),
        ),
        migrations.AlterField(
            model_name="decision",
            name="item_type",
            field=models.CharField(
                choices=[
                    ("fact", "Fact"),
                    ("episode", "Episode"),
                    ("procedure", "Procedure"),
                    ("identity", "Identity"),
                ],
                max_length=16,
            ),
        ),
        migrations.AddConstraint(
            model_name="decision",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(
                        ("event__isnull", True),
                        ("fact__isnull", False),
                        ("identity_block__isnull", True),
                        ("item_type", "fact"),
                        ("procedure__isnull", True),
                    ),
                    models.Q(
                        ("event__isnull", False),
                        ("fact__isnull", True),
                        ("identity_block__isnull", True),
                        ("item_type", "episode"),
                        ("procedure__isnull", True),
                    ),
                    models.Q(
                        ("event__isnull", True),
                        ("fact__isnull", True),
                        ("identity_block__isnull", True),
                        ("item_type", "procedure"),
                        ("procedure__isnull", False),
                    ),
                    models.Q(
                        ("event__isnull", True),
                        ("fact__isnull", True),
                        ("identity_block__isnull", False),
                        ("item_type", "identity"),
                        ("procedure__isnull", True),
                    ),
                    _connector="OR",
                ),
                name="decision_one_item",
            ),
        ),
    ]
