"""manage.py backup [--out FILE]: the configured database (the embedded one by default) in pg_dump's custom
format, for manage.py restore."""
from __future__ import annotations

import subprocess
from datetime import datetime, timezone
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from hakimem.dbserver import client_program, libpq_environment


class Command(BaseCommand):
    help = "Dump the database (pg_dump, custom format) to a file."

    def add_arguments(self, parser):
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        parser.add_argument("--out", type=Path, default=Path(settings.VAR_DIR) / "backups" / f"hakimem-{stamp}.dump")

    def handle(self, *args, out: Path, **options):
        out.parent.mkdir(parents=True, exist_ok=True)
        partial = out.with_name(out.name + ".partial")  # a dump cut short never takes the final name
        command = [client_program("pg_dump"), "--format=custom", "--no-owner", f"--file={partial}"]
        result = subprocess.run(command, env=libpq_environment(settings.DATABASES["default"]),
                                capture_output=True, text=True)
        if result.returncode != 0:
            partial.unlink(missing_ok=True)
            raise CommandError(f"pg_dump failed ({result.returncode}): {result.stderr.strip()}")
        partial.replace(out)
        self.stdout.write(f"{out} ({out.stat().st_size / 2**20:.1f} MB)")
