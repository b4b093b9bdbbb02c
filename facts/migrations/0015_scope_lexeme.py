"""Every fact's and event's search_vector gains one lexeme naming its scope (facts.models.ScopeLexeme), so that the
full-text indexes find a scope's matches by themselves (context.retrieval.scoped_match).

hakimem_scope_lexeme and hakimem_scope_query are IMMUTABLE SQL functions with standard bodies: the generated column
calls the first; a query's `hakimem_scope_query(project, subject)` is inlined and folded into a constant when planned.
The column's new expression rewrites both tables and rebuilds their indexes (14 min at 1M facts on a 2-core machine,
the hnsw graphs most of it). Run `VACUUM (ANALYZE) facts_fact, facts_event` after it (it cannot run inside a
migration's transaction): until the rewritten tables have a visibility map again, the planner stops reading vectors
index-only from the covering indexes (docs/performance.md)."""

import django.contrib.postgres.search
from django.contrib.postgres.search import SearchVector
from django.db import migrations, models

import facts.models

FUNCTIONS = """
CREATE FUNCTION hakimem_scope_lexeme(p_project text, p_subject text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 'scope ' || md5(p_project || chr(31) || p_subject);
CREATE FUNCTION hakimem_scope_query(p_project text, p_subject text) RETURNS tsquery
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN quote_literal(hakimem_scope_lexeme(p_project, p_subject))::tsquery;
"""
DROP_FUNCTIONS = """
DROP FUNCTION hakimem_scope_query(text, text);
DROP FUNCTION hakimem_scope_lexeme(text, text);
"""
WORDS = "to_tsvector('simple'::regconfig, COALESCE(text, ''::text))"
SCOPED = f"{WORDS} || array_to_tsvector(ARRAY[hakimem_scope_lexeme(project_id, subject_id)])"
TABLES = ("facts_fact", "facts_event")


def _expression(expression: str) -> list[str]:
    return [f"ALTER TABLE {table} ALTER COLUMN search_vector SET EXPRESSION AS ({expression})" for table in TABLES]


def _field():
    return models.GeneratedField(
        db_persist=True,
        expression=SearchVector("text", config="simple") + facts.models.ScopeLexeme(),
        output_field=django.contrib.postgres.search.SearchVectorField(),
    )


class Migration(migrations.Migration):
    dependencies = [
        ("facts", "0014_scope_word_counts"),
    ]

    operations = [
        migrations.RunSQL(FUNCTIONS, DROP_FUNCTIONS),
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(_expression(SCOPED), _expression(WORDS))],
            state_operations=[
                migrations.AlterField(model_name="fact", name="search_vector", field=_field()),
                migrations.AlterField(model_name="event", name="search_vector", field=_field()),
            ],
        ),
    ]
