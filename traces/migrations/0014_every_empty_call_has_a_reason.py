"""Every empty context call says why: four empty reasons beside no_relevant_memory (scope_unknown, scope_empty,
budget_too_small, all_blocked), checked by the database as the status is, and `empty_details`, what the reason says
in numbers. A call that served something never had a reason, so the second check holds for the traces already
written. The calls traced before this migration that came back empty for another reason than the floor keep a null
reason: nothing recorded then says which it was, and the statistics count them apart (stats.selectors.Overview)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("traces", "0013_trace_ids_minted_in_time_order"),
    ]

    operations = [
        migrations.AddField(
            model_name="trace",
            name="empty_details",
            field=models.JSONField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="trace",
            name="empty_reason",
            field=models.CharField(
                blank=True,
                choices=[
                    ("scope_unknown", "unknown subject: nothing was ever written for it"),
                    ("scope_empty", "nothing to serve: its facts retracted, superseded or no longer valid"),
                    ("budget_too_small", "the budget is too small for any item"),
                    ("all_blocked", "everything relevant blocked: open conflict, consent or staleness"),
                    ("no_relevant_memory", "nothing relevant enough to the query"),
                ],
                max_length=32,
                null=True,
            ),
        ),
        migrations.AddConstraint(
            model_name="trace",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("empty_reason__isnull", True),
                    (
                        "empty_reason__in",
                        ["scope_unknown", "scope_empty", "budget_too_small", "all_blocked", "no_relevant_memory"],
                    ),
                    _connector="OR",
                ),
                name="trace_empty_reason_valid",
            ),
        ),
        migrations.AddConstraint(
            model_name="trace",
            constraint=models.CheckConstraint(
                condition=models.Q(("empty_reason__isnull", True), ("used_tokens", 0), _connector="OR"),
                name="trace_empty_reason_only_when_empty",
            ),
        ),
    ]
