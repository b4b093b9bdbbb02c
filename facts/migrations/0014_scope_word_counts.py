"""facts_scopewordcounts and facts_scopeword: a large scope's own word counts (facts.models.ScopeWordCounts,
facts.scope_words.scope_words_refresh), under row security like every table holding a project's rows: the words are the
subject's."""

from django.db import migrations, models

from hakimem.rowsecurity import disable_sql, enable_sql

TABLES = ("facts_scopewordcounts", "facts_scopeword")


class Migration(migrations.Migration):
    dependencies = [
        ("facts", "0013_reembed_procedures"),
    ]

    operations = [
        migrations.CreateModel(
            name="ScopeWord",
            fields=[
                (
                    "pk",
                    models.CompositePrimaryKey(
                        "project_id",
                        "subject_id",
                        "items_table",
                        "word",
                        blank=True,
                        editable=False,
                        primary_key=True,
                        serialize=False,
                    ),
                ),
                ("project_id", models.CharField(max_length=128)),
                ("subject_id", models.CharField(max_length=128)),
                ("items_table", models.CharField(max_length=32)),
                ("word", models.TextField()),
                ("items", models.IntegerField()),
            ],
        ),
        migrations.CreateModel(
            name="ScopeWordCounts",
            fields=[
                (
                    "pk",
                    models.CompositePrimaryKey(
                        "project_id",
                        "subject_id",
                        "items_table",
                        blank=True,
                        editable=False,
                        primary_key=True,
                        serialize=False,
                    ),
                ),
                ("project_id", models.CharField(max_length=128)),
                ("subject_id", models.CharField(max_length=128)),
                ("items_table", models.CharField(max_length=32)),
                ("items", models.IntegerField()),
                ("unlisted_max", models.IntegerField()),
                ("counted_at", models.DateTimeField()),
            ],
            options={
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(("items__gte", 0), ("unlisted_max__gte", 0)), name="scope_word_counts_sizes"
                    ),
                    models.CheckConstraint(
                        condition=models.Q(("items_table__in", ["facts_fact", "facts_event"])),
                        name="scope_word_counts_table",
                    ),
                ],
            },
        ),
        migrations.RunSQL(
            [sql for table in TABLES for sql in enable_sql(table)],
            [sql for table in TABLES for sql in disable_sql(table)],
        ),
    ]
