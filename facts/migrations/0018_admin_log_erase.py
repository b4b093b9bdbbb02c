"""Erasure deletes the admin's log entries about the erased rows (they hold their text), but the API role, which
erases through DELETE /v1/subjects, may no longer read the admin's log (hakimem/migrations/0005):
hakimem_admin_log_erase deletes, as the log's owner, the entries about the rows the caller names, and only about
rows of the memory store (this app's models, whose ids are UUIDs no other project's key ever sees)."""

from django.db import migrations

from hakimem.rowsecurity import API_ROLE, STAFF_ROLE

FORWARD = """
DO $do$
BEGIN
    EXECUTE format($f$
CREATE FUNCTION hakimem_admin_log_erase(p_content_types integer[], p_object_ids text[]) RETURNS integer
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = %%I, pg_temp AS $body$
WITH gone AS (
    DELETE FROM django_admin_log l
     USING unnest(p_content_types, p_object_ids) AS e(content_type_id, object_id)
     WHERE l.content_type_id = e.content_type_id AND l.object_id = e.object_id
       AND l.content_type_id IN (SELECT t.id FROM django_content_type t WHERE t.app_label = 'facts')
    RETURNING 1)
SELECT count(*)::integer FROM gone
$body$$f$, current_schema());
END
$do$;
REVOKE ALL ON FUNCTION hakimem_admin_log_erase(integer[], text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION hakimem_admin_log_erase(integer[], text[]) TO %(api)s, %(staff)s;
""" % {"api": API_ROLE, "staff": STAFF_ROLE}


class Migration(migrations.Migration):
    dependencies = [
        ("facts", "0017_table_stats_per_project"),
        ("hakimem", "0005_api_role_without_credentials"),
    ]

    operations = [migrations.RunSQL(FORWARD, "DROP FUNCTION hakimem_admin_log_erase(integer[], text[])")]
