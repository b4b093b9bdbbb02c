"""ReembedRun moves here from the store (facts): the table facts_reembedrun stays as it is, only the state moves;
its content type follows it, so its permissions name this app."""

from django.db import migrations, models


def content_type_to(app_label: str, other: str):
    def move(apps, schema_editor):
        ContentType = apps.get_model("contenttypes", "ContentType")
        ContentType.objects.filter(app_label=other, model="reembedrun").update(app_label=app_label)

    return move


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("facts", "0018_admin_log_erase"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="ReembedRun",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("provider", models.CharField(max_length=64)),
                        ("model", models.CharField(blank=True, default="", max_length=200)),
                        ("dimension", models.PositiveIntegerField()),
                        ("started_at", models.DateTimeField()),
                        ("finished_at", models.DateTimeField(blank=True, null=True)),
                        (
                            "fact_cursor",
                            models.UUIDField(
                                blank=True, help_text="The last fact re-embedded, by id order.", null=True
                            ),
                        ),
                        ("facts_done", models.BooleanField(default=False)),
                        (
                            "event_cursor",
                            models.UUIDField(
                                blank=True, help_text="The last event re-embedded, by id order.", null=True
                            ),
                        ),
                        ("events_done", models.BooleanField(default=False)),
                        (
                            "procedure_cursor",
                            models.UUIDField(
                                blank=True, help_text="The last procedure re-embedded, by id order.", null=True
                            ),
                        ),
                        ("facts_embedded", models.PositiveIntegerField(default=0)),
                        ("events_embedded", models.PositiveIntegerField(default=0)),
                        ("procedures_embedded", models.PositiveIntegerField(default=0)),
                    ],
                    options={
                        "db_table": "facts_reembedrun",
                        "constraints": [
                            models.CheckConstraint(
                                condition=models.Q(
                                    ("finished_at__isnull", True), ("facts_done", True), _connector="OR"
                                ),
                                name="reembed_finished_after_facts",
                            )
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(content_type_to("portability", "facts"), content_type_to("facts", "portability")),
    ]
