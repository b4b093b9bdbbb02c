"""manage.py restore FILE --yes: replace the configured database's contents with a manage.py backup file, or fill a
new, empty database with it (a new server, a Citus coordinator: docs/scaling.md, "Moving from one server").

One transaction (pg_restore --single-transaction): a restore that fails leaves the database as it was.
Stop the server first: open connections hold locks the restore waits for, and caches (the planner's
statistics, the query-vector cache) would describe the data replaced. Into a migrated database it drops each object
before making it again (--clean); the database's extensions (vector) are left as they are, not dropped and made
again: only their owner, a superuser on an existing PostgreSQL, may, and the tables' owner the restore runs as is
none. Into a database never migrated (no django_migrations table) it drops nothing (PostgreSQL refuses `DROP POLICY IF EXISTS`
on a table that does not exist) and creates the extensions the dump names when they are missing (`CREATE EXTENSION
IF NOT EXISTS`: a user allowed to, or a database where they exist already)."""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

from django.apps import apps
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from hakimem.dbserver import client_program, libpq_environment
from hakimem.rowsecurity import MATCH_LEAKPROOF_IF_ALLOWED_SQL, api_role_revoke, without_api_tables

# A line of `pg_restore --list`: "2; 3079 16386 EXTENSION - vector postgres", "3437; 0 0 COMMENT - EXTENSION vector".
EXTENSION_ENTRY = re.compile(r"^\d+; \d+ \d+ (EXTENSION|COMMENT - EXTENSION) ")
EXTENSION_COMMENT_ENTRY = re.compile(r"^\d+; \d+ \d+ COMMENT - EXTENSION ")


def restore_list(file: Path, env: dict[str, str], *, extensions: bool = False) -> str:
    """The archive's table of contents with its extensions' entries commented out (`extensions`: only their comments,
    which only an extension's owner may set)."""
    listed = subprocess.run(
        [client_program("pg_restore"), "--list", str(file)], env=env, capture_output=True, text=True
    )
    if listed.returncode != 0:
        raise CommandError(f"pg_restore could not read {file} ({listed.returncode}): {listed.stderr.strip()}")
    skipped = EXTENSION_COMMENT_ENTRY if extensions else EXTENSION_ENTRY
    return "".join(f";{line}" if skipped.match(line) else line for line in listed.stdout.splitlines(True))


class Command(BaseCommand):
    help = "Restore a backup made by manage.py backup, replacing the database's contents."

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
        parser.add_argument("--yes", action="store_true", help="confirm: every table is replaced by the backup's")

    def handle(self, *args, file: Path, yes: bool, **options):
        if not file.is_file():
            raise CommandError(f"no such backup: {file}")
        if not yes:
            raise CommandError("restore replaces every table of the database: run again with --yes")
        with connections["default"].cursor() as cursor:
            cursor.execute("SELECT to_regclass('django_migrations') IS NOT NULL")
            migrated = cursor.fetchone()[0]
        connections.close_all()  # this process's own connections would block the DROPs
        env = libpq_environment(settings.DATABASES["default"])
        with tempfile.NamedTemporaryFile("w", suffix=".list") as entries:
            entries.write(restore_list(file, env, extensions=not migrated))
            entries.flush()
            command = [
                client_program("pg_restore"),
                *(["--clean", "--if-exists"] if migrated else []),
                "--single-transaction",
                "--no-owner",
                "--exit-on-error",
                f"--use-list={entries.name}",
                f"--dbname={settings.DATABASES['default']['NAME']}",
                str(file),
            ]
            result = subprocess.run(command, env=env, capture_output=True, text=True)
        if result.returncode != 0:
            raise CommandError(f"pg_restore failed ({result.returncode}); nothing was changed: {result.stderr.strip()}")
        with connections["default"].cursor() as cursor:
            # Tables made again took the schema's default privileges, the API role's among them: take back those
            # it must not hold (a dump keeps no revocation of a default privilege).
            api_role_revoke(cursor, without_api_tables(apps))
            cursor.execute(MATCH_LEAKPROOF_IF_ALLOWED_SQL)  # a pg_catalog function's attribute is not in a dump
            cursor.execute("ANALYZE")  # statistics are not in a dump
        self.stdout.write(f"restored {file}" + ("" if migrated else " into an empty database"))
