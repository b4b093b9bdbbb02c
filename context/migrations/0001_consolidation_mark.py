"""Consolidation's watermark per project (context.models.ConsolidationMark), under row security by its project."""

from django.db import migrations, models

from hakimem.rowsecurity import disable_sql, enable_sql


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("hakimem", "0002_database_roles"),
    ]

    operations = [
        migrations.CreateModel(
            name="ConsolidationMark",
            fields=[
                ("project_id", models.CharField(max_length=128, primary_key=True, serialize=False)),
                ("consolidated_at", models.DateTimeField()),
            ],
        ),
        migrations.RunSQL(enable_sql("context_consolidationmark"), disable_sql("context_consolidationmark")),
    ]
