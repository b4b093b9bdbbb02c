"""Write a project's memory, or one subject's, as JSON lines on stdout (format: portability/records.py).

python manage.py export_scope --project P [--subject S] [--with-embeddings] > memory.jsonl
"""

import sys

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from hakimem.embeddings import EmbedderUnavailable, get_embedder
from hakimem.validators import SCOPE_ID_HELP, is_scope_id
from portability.scope_export import export_lines, scope_export, snapshot


class Command(BaseCommand):
    help = (
        "Export a project's (or a subject's) facts, events, conflict sets, identity blocks and procedures as JSON "
        "lines on stdout"
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True)
        parser.add_argument(
            "--subject",
            help="one subject of the project (default: all of them, and the project-wide "
            "identity blocks and procedures)",
        )
        parser.add_argument(
            "--with-embeddings",
            action="store_true",
            help="include each fact's, event's and procedure's vector (import reuses them with the same embedder)",
        )

    def handle(self, *args, project, subject, with_embeddings, **options):
        for name, value in (("--project", project), ("--subject", subject)):
            if value is not None and not is_scope_id(value):
                raise CommandError(f"{name} must be {SCOPE_ID_HELP}")
        try:
            embedder = get_embedder()
        except EmbedderUnavailable as exc:
            raise CommandError(str(exc)) from exc
        out = self.stdout._out
        if out is sys.stdout and hasattr(out, "reconfigure"):
            out.reconfigure(encoding="utf-8")  # JSON lines are UTF-8 whatever the locale
        err = self.stderr._out
        with snapshot():
            export = scope_export(
                project_id=project, subject_id=subject, with_embeddings=with_embeddings, embedder=embedder
            )
            total = sum(export.header["counts"].values())
            with tqdm(total=total, unit="rec", desc="export", file=err, disable=not err.isatty()) as bar:
                lines = export_lines(export)
                out.write(next(lines) + "\n")
                for line in lines:
                    out.write(line + "\n")
                    bar.update()
        out.flush()
        counts = export.header["counts"]
        self.stderr.write(
            f"exported {counts['facts']} facts, {counts['events']} events, "
            f"{counts['conflict_sets']} conflict sets, {counts['identity_blocks']} identity blocks, "
            f"{counts['procedures']} procedures of {project}{'/' + subject if subject else ''}"
        )
