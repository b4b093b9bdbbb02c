"""Row-level security on the memory store (hakimem/rowsecurity.py): facts, events, conflict sets, consents and
project settings by their project, conflict members by their set.

Row security also hides a table's statistics in pg_stats from the roles it binds, and the retrieval path
reads them (rarity of words, size of a subject): hakimem_table_stats() reads them as the tables' owner, for
these two tables only, and the request roles may call it.

Under row security, PostgreSQL runs a query's own conditions after the policy's unless their functions are
LEAKPROOF, and only then can they be index conditions: the full-text match (`@@`, ts_match_vq) is not marked
so, and the lexical leg lost its GIN index (an 18k-fact scope: 24 ms filtering the scope's rows instead of
~1 ms). ts_match_vq answers true or false and raises no error that depends on a row, so it leaks nothing;
marking it needs a superuser (the embedded server's migrations run as one). Elsewhere the migration warns,
and an administrator runs once per database:
    ALTER FUNCTION pg_catalog.ts_match_vq(tsvector, tsquery) LEAKPROOF;
"""

from django.db import migrations

from hakimem.rowsecurity import API_ROLE, STAFF_ROLE, disable_sql, enable_child_sql, enable_sql

TABLE_STATS_FUNCTION = f"""
CREATE FUNCTION hakimem_table_stats(p_table regclass, p_graphs text)
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
 WHERE c.oid = p_table AND c.relname IN ('facts_fact', 'facts_event')
$$;
REVOKE ALL ON FUNCTION hakimem_table_stats(regclass, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION hakimem_table_stats(regclass, text) TO {API_ROLE}, {STAFF_ROLE};
"""

MATCH_LEAKPROOF = """
DO $$
BEGIN
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        ALTER FUNCTION pg_catalog.ts_match_vq(tsvector, tsquery) LEAKPROOF;
    ELSE
        RAISE WARNING 'hakimem: run ALTER FUNCTION pg_catalog.ts_match_vq(tsvector, tsquery) LEAKPROOF as a '
                      'superuser, or the full-text leg of context calls cannot use its GIN index under row security';
    END IF;
END
$$;
"""
MATCH_NOT_LEAKPROOF = """
DO $$
BEGIN
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        ALTER FUNCTION pg_catalog.ts_match_vq(tsvector, tsquery) NOT LEAKPROOF;
    END IF;
END
$$;
"""

FORWARD = [
    *enable_sql("facts_fact"),
    *enable_sql("facts_event"),
    *enable_sql("facts_conflictset"),
    *enable_child_sql("facts_conflictmember", parent="facts_conflictset", fk="conflict_set_id"),
    *enable_sql("facts_consent"),
    *enable_sql("facts_project"),
    TABLE_STATS_FUNCTION,
    MATCH_LEAKPROOF,
]
BACKWARD = [
    MATCH_NOT_LEAKPROOF,
    "DROP FUNCTION IF EXISTS hakimem_table_stats(regclass, text)",
    *disable_sql("facts_project"),
    *disable_sql("facts_consent"),
    *disable_sql("facts_conflictmember"),
    *disable_sql("facts_conflictset"),
    *disable_sql("facts_event"),
    *disable_sql("facts_fact"),
]


class Migration(migrations.Migration):
    dependencies = [
        ("facts", "0007_reembed_runs"),
        ("hakimem", "0002_database_roles"),
    ]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
