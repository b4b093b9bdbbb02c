"""Apply to the memory store what context calls only decided for themselves, and tidy what they left behind
(context/consolidation.py): contradicting pairs superseded (newest_wins) or proposed to curators (curator),
near-duplicates merged, access counts decayed to nothing deleted.

    python manage.py consolidate                          # every project, each since its last run
    python manage.py consolidate --project acme           # one project
    python manage.py consolidate --since 2026-11-01       # this window instead of the last run's
    python manage.py consolidate --dry-run                # say what would change, change nothing

Run it from cron (nightly, say), or let the task queue's worker run it (context/tasks.py).
"""

from django.core.management.base import BaseCommand

from context.consolidation import consolidate
from context.management.commands.replay import _moment  # an ISO date or moment, as replay's --since


class Command(BaseCommand):
    help = "Settle query-time contradictions, merge near-duplicates and prune decayed access counts"

    def add_arguments(self, parser):
        parser.add_argument("--project", default=None, help="only this project")
        parser.add_argument(
            "--since",
            default=None,
            help="read the calls since this ISO date or moment (default: each project's last run)",
        )
        parser.add_argument("--dry-run", action="store_true", help="report what would change, change nothing")

    def handle(self, *args, project, since, dry_run, **options):
        report = consolidate(project_id=project, since=_moment(since, "since") if since else None, dry_run=dry_run)
        verb = "would change" if dry_run else "changed"
        self.stdout.write(
            f"{verb}: {report.contradictions_superseded} fact(s) superseded by a newer contradicting fact, "
            f"{report.contradictions_proposed} contradiction(s) proposed to curators, "
            f"{report.duplicates_merged} near-duplicate(s) merged, "
            f"{report.item_accesses_deleted} decayed access count(s) deleted, "
            f"{report.scope_graphs_created} scope(s) given their own hnsw graph, "
            f"{report.scope_text_indexes_created} their own full-text index, "
            f"{report.scope_words_counted} scope(s)' words counted\n"
            f"left alone: {report.contradictions_skipped} contradiction(s) no longer to settle, "
            f"{report.item_accesses_kept} access count(s) kept; {report.projects} project(s)"
        )
