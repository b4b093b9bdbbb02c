"""Import a file written by export_scope (format: portability/records.py; guarantees:
portability/scope_import.py).

    python manage.py import_jsonl memory.jsonl [--skip-existing]

The whole file is checked first (every line, and ids already in the database), so a bad line is reported
with its line number and field and nothing is written. Then each scope is written in its own transaction
under the scope lock. The vectors of facts, events and procedures are recomputed with the configured embedder
unless the file carries them from the same embedder (provider, model, dimension).
"""

import os

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from hakimem.embeddings import EmbedderUnavailable, get_embedder
from portability.records import ImportRefused
from portability.scope_import import import_check, import_write


class Command(BaseCommand):
    help = "Import facts, events, conflict sets, identity blocks and procedures from a JSON lines file written by export_scope"

    def add_arguments(self, parser):
        parser.add_argument("path")
        parser.add_argument(
            "--skip-existing",
            action="store_true",
            help="leave rows whose id exists already (in the same scope) as they are, instead of refusing the file",
        )

    def handle(self, *args, path, skip_existing, **options):
        if not os.path.isfile(path):
            raise CommandError(f"no such file: {path}")
        size = os.path.getsize(path)
        err = self.stderr._out
        quiet = not err.isatty()
        try:
            embedder = get_embedder()
            with tqdm(total=size, unit="B", unit_scale=True, desc="check", file=err, disable=quiet) as bar:
                header, scopes = import_check(path, skip_existing=skip_existing, progress=bar.update)
            with tqdm(total=size, unit="B", unit_scale=True, desc="import", file=err, disable=quiet) as bar:
                report = import_write(
                    path, header=header, skip_existing=skip_existing, embedder=embedder, progress=bar.update
                )
        except ImportRefused as exc:
            if exc.scopes_written is None:
                raise CommandError(f"{path}: {exc}. Nothing was written.") from exc
            raise CommandError(
                f"{path}: {exc}. Scope {exc.scope[0]}/{exc.scope[1]} was rolled back; the {exc.scopes_written} "
                "scopes before it were imported (fix the file and rerun with --skip-existing to continue)."
            ) from exc
        except EmbedderUnavailable as exc:
            raise CommandError(f"cannot embed: {exc}") from exc
        w, s = report.written, report.skipped
        self.stdout.write(
            f"imported {_records(w)} in {report.scopes} scopes; embeddings: {report.embeddings_kept} from the file, "
            f"{report.embeddings_computed} computed" + (f"; skipped existing: {_records(s)}" if any(s.values()) else "")
        )


def _records(counts: dict[str, int]) -> str:
    return (
        f"{counts['facts']} facts, {counts['events']} events, {counts['conflict_sets']} conflict sets, "
        f"{counts['identity_blocks']} identity blocks, {counts['procedures']} procedures"
    )
