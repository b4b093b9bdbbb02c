from django.db import migrations


class Migration(migrations.Migration):
    """Autovacuum visits facts_fact after 1,000 + 2% of its rows are inserted (default: + 20%). Vacuum is what
    marks pages all-visible, and only all-visible pages let the exact dense leg read a scope's vectors from
    the covering index facts_fact_scope_vectors alone; at the default, a 1M-fact table would wait for 200k
    new facts. ANALYZE keeps the planner's per-subject and per-word statistics as fresh for the same reason
    (context.retrieval.TableStats)."""

    dependencies = [("facts", "0003_scope_vectors_covering_index")]

    operations = [
        migrations.RunSQL(
            "ALTER TABLE facts_fact SET (autovacuum_vacuum_insert_scale_factor = 0.02,"
            " autovacuum_analyze_scale_factor = 0.02)",
            reverse_sql="ALTER TABLE facts_fact RESET (autovacuum_vacuum_insert_scale_factor,"
            " autovacuum_analyze_scale_factor)",
        ),
    ]
