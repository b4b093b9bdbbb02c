"""Each decision holds its trace's project, so that row-level security filters decisions on a column of their
own (traces/migrations/0007) rather than through a subquery on traces per row checked."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("traces", "0005_consent_missing_reason"),
    ]

    operations = [
        migrations.AddField(
            model_name="decision",
            name="project_id",
            field=models.CharField(default="", max_length=128),
            preserve_default=False,
        ),
        migrations.RunSQL(
            "UPDATE traces_decision d SET project_id = t.project_id FROM traces_trace t WHERE t.id = d.trace_id",
            migrations.RunSQL.noop,
        ),
    ]
