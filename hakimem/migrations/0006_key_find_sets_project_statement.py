"""hakimem_api_key_find sets the key's project with a SET LOCAL statement instead of set_config(): on a Citus cluster
the coordinator passes SET LOCAL on to the workers, where the shards' policies read it (hakimem/rowsecurity.py,
docs/scaling.md); on one server the two are the same. SET LOCAL inside the function outlives it, as set_config(...,
true) did: the function's own SET clause is search_path alone."""

from django.db import migrations

KEY_FIND = """
DO $do$
BEGIN
    EXECUTE format($f$
CREATE OR REPLACE FUNCTION hakimem_api_key_find(p_key_hash text, p_scope boolean)
RETURNS TABLE (key_id bigint, key_project_id text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = %%I, pg_temp AS $body$
BEGIN
    SELECT k.id, k.project_id INTO key_id, key_project_id
      FROM hakimem_apikey k WHERE k.key_hash = p_key_hash AND k.revoked_at IS NULL;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF p_scope THEN
        %s
    END IF;
    RETURN NEXT;
END
$body$$f$, current_schema());
END
$do$;
"""

SET_STATEMENT = "EXECUTE format('SET LOCAL hakimem.project_id = %%L', key_project_id);"  # %% for the DO's format()
SET_CONFIG = "PERFORM set_config('hakimem.project_id', key_project_id, true);"


class Migration(migrations.Migration):
    dependencies = [("hakimem", "0005_api_role_without_credentials")]

    operations = [
        migrations.RunSQL(KEY_FIND % SET_STATEMENT, KEY_FIND % SET_CONFIG),
    ]
