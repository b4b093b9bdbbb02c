"""Identity blocks and procedures (issue 15), under row security like the rest of the memory store
(hakimem/rowsecurity.py); hakimem_table_stats (0008) also answers for the procedures' table, whose lexical leg
and dense strategy the retrieval path sizes from its statistics as it does for facts and events."""

import django.contrib.postgres.indexes
import django.contrib.postgres.search
import django.db.models.functions.text
import django.db.models.lookups
import facts.models
import hakimem.validators
import pgvector.django.halfvec
import pgvector.django.indexes
import uuid
from django.db import migrations, models

from hakimem.rowsecurity import disable_sql, enable_sql


def table_stats_function(tables: str) -> str:
    """0008's hakimem_table_stats, answering for `tables` (its signature and grants stay)."""
    return f"""
CREATE OR REPLACE FUNCTION hakimem_table_stats(p_table regclass, p_graphs text)
RETURNS TABLE (reltuples real, elems text[], elem_freqs real[], subjects text[], subject_freqs real[],
               n_distinct real, graphs text[])
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog AS $$
SELECT c.reltuples,
       t.most_common_elems::text::text[], t.most_common_elem_freqs,
       s.most_common_vals::text::text[], s.most_common_freqs, s.n_distinct,
       ARRAY(SELECT i.relname::text FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
              WHERE x.indrelid = c.oid AND i.relname LIKE p_graphs)
  FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace
  LEFT JOIN pg_stats t ON t.schemaname = n.nspname AND t.tablename = c.relname AND t.attname = 'search_vector'
  LEFT JOIN pg_stats s ON s.schemaname = n.nspname AND s.tablename = c.relname AND s.attname = 'subject_id'
 WHERE c.oid = p_table AND c.relname IN ({tables})
$$;
"""


FORWARD = [
    *enable_sql("facts_identityblock"),
    *enable_sql("facts_procedure"),
    table_stats_function("'facts_fact', 'facts_event', 'facts_procedure'"),
]
BACKWARD = [
    table_stats_function("'facts_fact', 'facts_event'"),
    *disable_sql("facts_procedure"),
    *disable_sql("facts_identityblock"),
]


class Migration(migrations.Migration):
    dependencies = [
        ("facts", "0009_event_extraction"),
    ]

    operations = [
        migrations.CreateModel(
            name="IdentityBlock",
            fields=[
                ("id", models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ("project_id", models.CharField(max_length=128, validators=[hakimem.validators.validate_scope_id])),
                (
                    "subject_id",
                    models.CharField(
                        blank=True,
                        default="",
                        help_text="Empty: every subject of the project.",
                        max_length=128,
                        validators=[facts.models.validate_scope_id_or_project_wide],
                    ),
                ),
                ("name", models.CharField(max_length=100)),
                ("text", models.TextField()),
                (
                    "position",
                    models.PositiveIntegerField(default=0, help_text="Blocks are served by position, then name."),
                ),
                ("enabled", models.BooleanField(default=True)),
                ("metadata", models.JSONField(blank=True, default=dict)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("updated_at", models.DateTimeField(auto_now=True)),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("project_id", "subject_id", "name"), name="identity_block_name_unique_in_scope"
                    ),
                    models.CheckConstraint(
                        condition=models.Q(
                            django.db.models.lookups.GreaterThanOrEqual(
                                django.db.models.functions.text.Length("text"), 1
                            ),
                            django.db.models.lookups.LessThanOrEqual(
                                django.db.models.functions.text.Length("text"), 4000
                            ),
                        ),
                        name="identity_block_text_length",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(
                            django.db.models.lookups.GreaterThanOrEqual(
                                django.db.models.functions.text.Length("name"), 1
                            )
                        ),
                        name="identity_block_name_not_empty",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(
                            django.db.models.lookups.Exact(
                                models.Func(
                                    models.F("metadata"), function="jsonb_typeof", output_field=models.CharField()
                                ),
                                "object",
                            )
                        ),
                        name="identity_block_metadata_object",
                    ),
                ],
            },
        ),
        migrations.CreateModel(
            name="Procedure",
            fields=[
                ("id", models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ("project_id", models.CharField(max_length=128, validators=[hakimem.validators.validate_scope_id])),
                (
                    "subject_id",
                    models.CharField(
                        blank=True,
                        default="",
                        help_text="Empty: every subject of the project.",
                        max_length=128,
                        validators=[facts.models.validate_scope_id_or_project_wide],
                    ),
                ),
                ("title", models.CharField(max_length=200)),
                ("text", models.TextField(help_text="The steps.")),
                ("category", models.CharField(blank=True, default="", max_length=64)),
                ("importance", models.FloatField(default=0.5)),
                ("embedding", pgvector.django.halfvec.HalfVectorField(dimensions=384)),
                (
                    "search_vector",
                    models.GeneratedField(
                        db_persist=True,
                        expression=django.contrib.postgres.search.SearchVector("title", "text", config="simple"),
                        output_field=django.contrib.postgres.search.SearchVectorField(),
                    ),
                ),
                (
                    "status",
                    models.CharField(
                        choices=[("active", "Active"), ("retracted", "Retracted")], default="active", max_length=16
                    ),
                ),
                ("metadata", models.JSONField(blank=True, default=dict)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("updated_at", models.DateTimeField(auto_now=True)),
            ],
            options={
                "indexes": [
                    pgvector.django.indexes.HnswIndex(
                        condition=models.Q(("status", "active")),
                        ef_construction=64,
                        fields=["embedding"],
                        m=16,
                        name="facts_procedure_embedding_hnsw",
                        opclasses=["halfvec_cosine_ops"],
                    ),
                    django.contrib.postgres.indexes.GinIndex(
                        condition=models.Q(("status", "active")),
                        fields=["search_vector"],
                        name="facts_procedure_search_gin",
                    ),
                    models.Index(
                        condition=models.Q(("status", "active")),
                        fields=["project_id", "subject_id"],
                        include=("id", "embedding"),
                        name="facts_procedure_scope_vectors",
                    ),
                    models.Index(
                        fields=["project_id", "subject_id", "-created_at", "-id"], name="facts_procedure_scope_created"
                    ),
                ],
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(("status__in", ["active", "retracted"])), name="procedure_status_valid"
                    ),
                    models.CheckConstraint(
                        condition=models.Q(
                            django.db.models.lookups.GreaterThanOrEqual(
                                django.db.models.functions.text.Length("text"), 1
                            ),
                            django.db.models.lookups.LessThanOrEqual(
                                django.db.models.functions.text.Length("text"), 8000
                            ),
                        ),
                        name="procedure_text_length",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(
                            django.db.models.lookups.GreaterThanOrEqual(
                                django.db.models.functions.text.Length("title"), 1
                            ),
                            django.db.models.lookups.LessThanOrEqual(
                                django.db.models.functions.text.Length("title"), 200
                            ),
                        ),
                        name="procedure_title_length",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(("importance__gte", 0), ("importance__lte", 1)),
                        name="procedure_importance_range",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(
                            django.db.models.lookups.Exact(
                                models.Func(
                                    models.F("metadata"), function="jsonb_typeof", output_field=models.CharField()
                                ),
                                "object",
                            )
                        ),
                        name="procedure_metadata_object",
                    ),
                ],
            },
        ),
        migrations.RunSQL(FORWARD, BACKWARD),
    ]
