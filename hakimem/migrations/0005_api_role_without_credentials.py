"""The API role loses the tables it never reads: the people's accounts, sessions and admin log, the staff's
project limits and the API keys (docs/isolation.md). A request finds its key through hakimem_api_key_find, which
reads the keys as their owner and answers for one hash only; the staff role keeps every table (the admin signs
people in and manages keys), API keys now under row security like the memory store.
"""

from django.db import migrations

from hakimem.rowsecurity import API_ROLE, api_role_revoke, disable_sql, enable_sql, without_api_tables

# The raw secret's hash in, the live key's id and project out; with p_scope the request's row security takes the
# key's project in the same statement (set_config is transaction-local and outlives the function). Its search path
# is the tables' schema, then pg_temp: a caller's temporary table cannot stand in for the keys.
KEY_FIND = """
DO $do$
BEGIN
    EXECUTE format($f$
CREATE FUNCTION hakimem_api_key_find(p_key_hash text, p_scope boolean)
RETURNS TABLE (key_id bigint, key_project_id text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = %%I, pg_temp AS $body$
BEGIN
    SELECT k.id, k.project_id INTO key_id, key_project_id
      FROM hakimem_apikey k WHERE k.key_hash = p_key_hash AND k.revoked_at IS NULL;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF p_scope THEN
        PERFORM set_config('hakimem.project_id', key_project_id, true);
    END IF;
    RETURN NEXT;
END
$body$$f$, current_schema());
END
$do$;
REVOKE ALL ON FUNCTION hakimem_api_key_find(text, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION hakimem_api_key_find(text, boolean) TO %(api)s;
""" % {"api": API_ROLE}


def revoke(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        api_role_revoke(cursor, without_api_tables(apps))


def grant(apps, schema_editor):
    """As 0002_database_roles gave them."""
    with schema_editor.connection.cursor() as cursor:
        for table in without_api_tables(apps):
            cursor.execute(f'GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE "{table}" TO {API_ROLE}')
            cursor.execute(
                "SELECT s.oid::regclass::text FROM pg_depend d JOIN pg_class s ON s.oid = d.objid"
                " WHERE s.relkind = 'S' AND d.refobjid = %s::regclass",
                [table],
            )
            for (sequence,) in cursor.fetchall():
                cursor.execute(f"GRANT USAGE, SELECT, UPDATE ON SEQUENCE {sequence} TO {API_ROLE}")


class Migration(migrations.Migration):
    dependencies = [
        ("hakimem", "0004_rate_counters"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("sessions", "0001_initial"),
        ("admin", "0003_logentry_add_action_flag_choices"),
    ]

    operations = [
        migrations.RunPython(revoke, grant),
        migrations.RunSQL(
            [*enable_sql("hakimem_apikey"), KEY_FIND],
            ["DROP FUNCTION hakimem_api_key_find(text, boolean)", *disable_sql("hakimem_apikey")],
        ),
    ]
