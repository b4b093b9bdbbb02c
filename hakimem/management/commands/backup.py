"""manage.py backup [--out FILE]: the configured database (the embedded one by default) in pg_dump's custom
format, for manage.py restore. The dump holds every subject's memory: only its owner may read it (mode 600, in a
folder made mode 700), whatever the umask."""

from __future__ import annotations

import os
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
        out.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        partial = out.with_name(out.name + ".partial")  # a dump cut short never takes the final name
        partial.unlink(missing_ok=True)  # a leftover may have a wider mode, which O_CREAT would keep
        command = [client_program("pg_dump"), "--format=custom", "--no-owner"]
        with open(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as dump:
            result = subprocess.run(
                command,
                env=libpq_environment(settings.DATABASES["default"]),
                stdout=dump,
                stderr=subprocess.PIPE,
                text=True,
            )
        if result.returncode != 0:
            partial.unlink(missing_ok=True)
            raise CommandError(f"pg_dump failed ({result.returncode}): {result.stderr.strip()}")
        partial.replace(out)
        self.stdout.write(f"{out} ({out.stat().st_size / 2**20:.1f} MB)")
