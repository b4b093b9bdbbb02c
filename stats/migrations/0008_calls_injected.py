"""calls_with_facts becomes calls_injected: the calls that served something (used_tokens > 0), so that the injected
calls and the empty reasons count every call (a call that served episodes, an identity block or a procedure but no
fact was neither). The rolled-up rows add the calls of that kind among the traces still there (the erasers take
them out by the new count); those of pruned traces cannot be recounted, and the overview shows them under
not_recorded (stats.selectors.NOT_RECORDED)."""

from django.db import migrations, models

# The rolled-up calls that served something but no fact, per row of each table: traces before their project's mark.
_SERVED_NO_FACT = """
SELECT t.project_id, {period} AS {unit},{subject} count(*) AS n
  FROM traces_trace t JOIN stats_rollupmark m ON m.project_id = t.project_id AND t.created_at < m.rolled_until
 WHERE t.replay_of IS NULL AND t.used_tokens > 0 AND t.facts_served = 0
 GROUP BY 1, 2{subject_group}
"""


def _recount(table: str, unit: str, period: str, sign: str, subject: bool = False) -> str:
    source = _SERVED_NO_FACT.format(
        period=period, unit=unit, subject=" t.subject_id," if subject else "", subject_group=", 3" if subject else ""
    )
    match = " AND r.subject_id = a.subject_id" if subject else ""
    return (
        f"UPDATE {table} r SET calls_injected = r.calls_injected {sign} a.n FROM ({source}) a"
        f" WHERE r.project_id = a.project_id AND r.{unit} = a.{unit}{match}"
    )


_ROWS = [
    ("stats_slicetotals", "slice", "date_bin('5 minutes', t.created_at, timestamptz '2000-01-01 00:00+00')", False),
    ("stats_hourtotals", "hour", "date_trunc('hour', t.created_at, 'UTC')", False),
    ("stats_subjectday", "day", "date_trunc('day', t.created_at, 'UTC')", True),
]
RECOUNT = [_recount(table, unit, period, "+", subject) for table, unit, period, subject in _ROWS]
UNCOUNT = [_recount(table, unit, period, "-", subject) for table, unit, period, subject in _ROWS]

_HELP = "calls that served something (used_tokens > 0)"


class Migration(migrations.Migration):
    dependencies = [
        ("stats", "0007_finer_latency_buckets"),
        ("traces", "0014_every_empty_call_has_a_reason"),
    ]

    operations = [
        *(
            migrations.RenameField(model_name=model, old_name="calls_with_facts", new_name="calls_injected")
            for model in ("slicetotals", "hourtotals", "subjectday")
        ),
        *(
            migrations.AlterField(model_name=model, name="calls_injected", field=models.IntegerField(help_text=_HELP))
            for model in ("slicetotals", "hourtotals", "subjectday")
        ),
        migrations.RunSQL(RECOUNT, UNCOUNT),
    ]
