"""Two reason codes: superseded_in_context (the older fact of a pair found contradictory among a call's
candidates; `superseded_by` names the newer) and below_min_score (under the request's min_score)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("traces", "0009_decision_procedures_identity_tiers"),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="decision",
            name="decision_reason_valid",
        ),
        migrations.AddField(
            model_name="decision",
            name="superseded_by",
            field=models.UUIDField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="decision",
            name="reason_code",
            field=models.CharField(
                choices=[
                    ("included", "Included"),
                    ("multi_hop_expansion", "Multi Hop Expansion"),
                    ("over_budget", "Over Budget"),
                    ("below_relevance_floor", "Below Relevance Floor"),
                    ("conflict_open", "Conflict Open"),
                    ("volatility_expired", "Volatility Expired"),
                    ("consent_missing", "Consent Missing"),
                    ("superseded_in_context", "Superseded In Context"),
                    ("below_min_score", "Below Min Score"),
                ],
                max_length=32,
            ),
        ),
        migrations.AddIndex(
            model_name="decision",
            index=models.Index(
                condition=models.Q(("reason_code", "superseded_in_context")),
                fields=["project_id", "trace"],
                name="traces_decision_superseded",
            ),
        ),
        migrations.AddConstraint(
            model_name="decision",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    (
                        "reason_code__in",
                        [
                            "included",
                            "multi_hop_expansion",
                            "over_budget",
                            "below_relevance_floor",
                            "conflict_open",
                            "volatility_expired",
                            "consent_missing",
                            "superseded_in_context",
                            "below_min_score",
                        ],
                    )
                ),
                name="decision_reason_valid",
            ),
        ),
    ]
