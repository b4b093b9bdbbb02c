"""The two roles web requests run as (hakimem/rowsecurity.py), and their rights on every table.

Roles belong to the cluster, not the database: an existing one is kept. The user running the migrations
(the tables' owner) is made a member of both so that it can switch to them; a superuser needs no membership.
Without the right to create roles, create them beforehand as an administrator:
    CREATE ROLE hakimem_api NOLOGIN NOBYPASSRLS; CREATE ROLE hakimem_staff NOLOGIN NOBYPASSRLS;
    GRANT hakimem_api, hakimem_staff TO <the owner and the application's login user>;
"""

from django.db import migrations

from hakimem.rowsecurity import API_ROLE, STAFF_ROLE

ROLES = (API_ROLE, STAFF_ROLE)

CREATE = """
DO $$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY[%(roles)s] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
            BEGIN
                EXECUTE format('CREATE ROLE %%I NOLOGIN NOSUPERUSER NOBYPASSRLS NOINHERIT', r);
            EXCEPTION WHEN duplicate_object THEN NULL;  -- another database of the cluster made it meanwhile
            END;
        END IF;
        IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
            EXECUTE format('GRANT %%I TO %%I', r, current_user);
        END IF;
        EXECUTE format('GRANT USAGE ON SCHEMA %%I TO %%I', current_schema(), r);
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA %%I TO %%I', current_schema(), r);
        EXECUTE format('GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA %%I TO %%I', current_schema(), r);
        -- tables made later by the same owner (every later migration) get the same rights
        EXECUTE format('ALTER DEFAULT PRIVILEGES IN SCHEMA %%I GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO %%I', current_schema(), r);
        EXECUTE format('ALTER DEFAULT PRIVILEGES IN SCHEMA %%I GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO %%I', current_schema(), r);
    END LOOP;
END
$$;
""" % {"roles": ", ".join(f"'{r}'" for r in ROLES)}

REVOKE = """
DO $$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY[%(roles)s] LOOP
        EXECUTE format('ALTER DEFAULT PRIVILEGES IN SCHEMA %%I REVOKE ALL ON TABLES FROM %%I', current_schema(), r);
        EXECUTE format('ALTER DEFAULT PRIVILEGES IN SCHEMA %%I REVOKE ALL ON SEQUENCES FROM %%I', current_schema(), r);
        EXECUTE format('REVOKE ALL ON ALL TABLES IN SCHEMA %%I FROM %%I', current_schema(), r);
        EXECUTE format('REVOKE ALL ON ALL SEQUENCES IN SCHEMA %%I FROM %%I', current_schema(), r);
        EXECUTE format('REVOKE USAGE ON SCHEMA %%I FROM %%I', current_schema(), r);
    END LOOP;
END
$$;
""" % {"roles": ", ".join(f"'{r}'" for r in ROLES)}


class Migration(migrations.Migration):
    dependencies = [
        ("hakimem", "0001_initial"),
    ]

    operations = [migrations.RunSQL(CREATE, REVOKE)]
