"""The job's step becomes a 5-minute slice (stats.SliceTotals), so that the raw part of a period is minutes: the
overview reads the slices of the partial hours at its ends. The slices rolled up before are not known: a
project's existing mark says that slices are kept from it on (RollupMark.slices_since)."""

from django.db import migrations, models

from hakimem.rowsecurity import disable_sql, enable_sql


class Migration(migrations.Migration):
    dependencies = [
        ("stats", "0005_day_latencies"),
        ("hakimem", "0002_database_roles"),
    ]

    operations = [
        migrations.CreateModel(
            name="SliceTotals",
            fields=[
                (
                    "pk",
                    models.CompositePrimaryKey(
                        "project_id", "slice", blank=True, editable=False, primary_key=True, serialize=False
                    ),
                ),
                ("project_id", models.CharField(max_length=128)),
                ("slice", models.DateTimeField()),
                ("context_calls", models.IntegerField()),
                ("calls_with_facts", models.IntegerField()),
                ("used_tokens", models.BigIntegerField()),
                ("empty_reasons", models.JSONField(default=dict, help_text="{empty reason: calls}")),
                ("decisions", models.JSONField(default=dict, help_text="{reason code: decisions}")),
            ],
        ),
        migrations.RunSQL(enable_sql("stats_slicetotals"), disable_sql("stats_slicetotals")),
        migrations.AddField(
            model_name="rollupmark",
            name="slices_since",
            field=models.DateTimeField(null=True),
        ),
        migrations.RunSQL("UPDATE stats_rollupmark SET slices_since = rolled_until", migrations.RunSQL.noop),
        migrations.AlterField(
            model_name="rollupmark",
            name="slices_since",
            field=models.DateTimeField(),
        ),
    ]
