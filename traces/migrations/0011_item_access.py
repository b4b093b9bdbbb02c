"""How often each item was served, decayed over time (traces.models.ItemAccess): the access frequency signal,
kept by the trace writer; under row security by its project like the traces."""

from django.db import migrations, models

from hakimem.rowsecurity import disable_sql, enable_sql


class Migration(migrations.Migration):
    dependencies = [
        ("traces", "0010_superseded_in_context"),
    ]

    operations = [
        migrations.CreateModel(
            name="ItemAccess",
            fields=[
                (
                    "pk",
                    models.CompositePrimaryKey(
                        "project_id",
                        "subject_id",
                        "item_id",
                        blank=True,
                        editable=False,
                        primary_key=True,
                        serialize=False,
                    ),
                ),
                ("project_id", models.CharField(max_length=128)),
                ("subject_id", models.CharField(max_length=128)),
                (
                    "item_type",
                    models.CharField(
                        choices=[
                            ("fact", "Fact"),
                            ("episode", "Episode"),
                            ("procedure", "Procedure"),
                            ("identity", "Identity"),
                        ],
                        max_length=16,
                    ),
                ),
                ("item_id", models.UUIDField()),
                (
                    "count",
                    models.FloatField(help_text="servings, each decayed by exp(-age / ACCESS_TAU_DAYS), as of `at`"),
                ),
                ("at", models.DateTimeField()),
            ],
            options={
                "constraints": [
                    models.CheckConstraint(condition=models.Q(("count__gt", 0)), name="itemaccess_count_positive")
                ],
            },
        ),
        migrations.RunSQL(enable_sql("traces_itemaccess"), disable_sql("traces_itemaccess")),
    ]
