"""One reason code: neighbouring_turn, the turn after a served episode that ends in a question, served beside it."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("traces", "0014_every_empty_call_has_a_reason"),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="decision",
            name="decision_reason_valid",
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
                    ("neighbouring_turn", "Neighbouring Turn"),
                ],
                max_length=32,
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
                            "neighbouring_turn",
                        ],
                    )
                ),
                name="decision_reason_valid",
            ),
        ),
    ]
