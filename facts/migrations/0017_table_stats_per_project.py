"""hakimem_table_stats names only the subjects its caller may see (issue 35): it read the planner's most common
subjects of the whole table as the owner, every project's subject ids, for any request. It now answers as row
security would: every subject to a caller row security does not bind (the owner or a superuser, not switched to a
request role), else only those its projects hold (the API role's one project; the staff role's list, or every
project for "*"): another project's subject comes as a null beside its share, so that a caller's estimate of a
subject outside the list stays the planner's, whatever other tenants hold, without learning their ids. The shares
stay the table's (a subject id two projects share counts both)."""

from importlib import import_module

from django.db import migrations

from hakimem.rowsecurity import ALL_PROJECTS, API_ROLE, PROJECT_SETTING, STAFF_ROLE

TABLES = "'facts_fact', 'facts_event', 'facts_procedure'"

# Each most common subject is named when one row of the caller's projects holds it (a probe of the table's scope index).
FORWARD = f"""
DROP FUNCTION hakimem_table_stats(regclass, text);
CREATE FUNCTION hakimem_table_stats(p_table regclass, p_graphs text)
RETURNS TABLE (reltuples real, elems text[], elem_freqs real[], subjects text[], subject_freqs real[],
               n_distinct real, graphs text[])
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_role text := current_setting('role');
    v_setting text := coalesce(current_setting('{PROJECT_SETTING}', true), '');
    v_every boolean;
    v_projects text[];
BEGIN
    -- Inside this function current_user is the owner; the caller is session_user, switched to the role setting.
    v_every := (v_role = 'none' AND EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = session_user
                                              AND (r.rolsuper OR r.rolbypassrls
                                                   OR r.oid = (SELECT relowner FROM pg_class WHERE oid = p_table))))
               OR (v_role = '{STAFF_ROLE}' AND v_setting = '{ALL_PROJECTS}');
    v_projects := CASE WHEN v_role = '{STAFF_ROLE}' THEN string_to_array(v_setting, ',') ELSE ARRAY[v_setting] END;
    SELECT c.reltuples, t.most_common_elems::text::text[], t.most_common_elem_freqs,
           s.most_common_vals::text::text[], s.most_common_freqs, s.n_distinct,
           ARRAY(SELECT i.relname::text FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
                  WHERE x.indrelid = c.oid AND i.relname LIKE p_graphs)
      INTO reltuples, elems, elem_freqs, subjects, subject_freqs, n_distinct, graphs
      FROM pg_class c
      JOIN pg_namespace n ON n.oid = c.relnamespace
      LEFT JOIN pg_stats t ON t.schemaname = n.nspname AND t.tablename = c.relname AND t.attname = 'search_vector'
      LEFT JOIN pg_stats s ON s.schemaname = n.nspname AND s.tablename = c.relname AND s.attname = 'subject_id'
     WHERE c.oid = p_table AND c.relname IN ({TABLES});
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF subjects IS NOT NULL AND NOT v_every THEN
        EXECUTE format('SELECT coalesce(array_agg(CASE WHEN EXISTS (SELECT 1 FROM %s t WHERE t.project_id = ANY($2)'
                       ' AND t.subject_id = m.v) THEN m.v END ORDER BY i), ARRAY[]::text[])'
                       ' FROM unnest($1) WITH ORDINALITY AS m(v, i)', p_table)
           INTO subjects USING subjects, v_projects;
    END IF;
    RETURN NEXT;
END
$$;
REVOKE ALL ON FUNCTION hakimem_table_stats(regclass, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION hakimem_table_stats(regclass, text) TO {API_ROLE}, {STAFF_ROLE};
"""

BACKWARD = f"""
DROP FUNCTION hakimem_table_stats(regclass, text);
{import_module("facts.migrations.0010_identity_blocks_and_procedures").table_stats_function(TABLES)}
REVOKE ALL ON FUNCTION hakimem_table_stats(regclass, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION hakimem_table_stats(regclass, text) TO {API_ROLE}, {STAFF_ROLE};
"""


class Migration(migrations.Migration):
    dependencies = [
        ("facts", "0016_conflict_reading"),
    ]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
