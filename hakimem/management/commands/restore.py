"""manage.py restore FILE --yes: replace the configured database's contents with a manage.py backup file.

One transaction (pg_restore --single-transaction --clean): a restore that fails leaves the database as it was.
Stop the server first: open connections hold locks the restore waits for, and caches (the planner's
statistics, the query-vector cache) would describe the data replaced."""
from __future__ import annotations

import subprocess
from pathlib import Path

from django.apps import apps
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from hakimem.dbserver import client_program, libpq_environment
from hakimem.rowsecurity import api_role_revoke, without_api_tables


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
        connections.close_all()  # this process's own connections would block the DROPs
        command = [client_program("pg_restore"), "--clean", "--if-exists", "--single-transaction", "--no-owner",
                   "--exit-on-error", f"--dbname={settings.DATABASES['default']['NAME']}", str(file)]
        result = subprocess.run(command, env=libpq_environment(settings.DATABASES["default"]),
                                capture_output=True, text=True)
        if result.returncode != 0:
            raise CommandError(f"pg_restore failed ({result.returncode}); nothing was changed: {result.stderr.strip()}")
        with connections["default"].cursor() as cursor:
            # Tables made again took the schema's default privileges, the API role's among them: take back those
            # it must not hold (a dump keeps no revocation of a default privilege).
            api_role_revoke(cursor, without_api_tables(apps))
            cursor.execute("ANALYZE")  # statistics are not in a dump
        self.stdout.write(f"restored {file}")
