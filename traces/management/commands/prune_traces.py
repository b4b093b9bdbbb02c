"""Delete the traces older than the retention period, with their decisions, in batches.

    python manage.py prune_traces                  # HAKI_TRACE_RETENTION_DAYS (0: keep forever, nothing is deleted)
    python manage.py prune_traces --days 90        # this run's own period
    python manage.py prune_traces --dry-run        # count only

Run it from cron (daily, say). Each batch of --batch-size traces is its own transaction, so a context call never
waits long behind it.
"""

from datetime import timedelta

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from traces.services import PRUNE_BATCH_SIZE, traces_prune


class Command(BaseCommand):
    help = "Delete traces (and their decisions) older than HAKI_TRACE_RETENTION_DAYS, in batches"

    def add_arguments(self, parser):
        parser.add_argument(
            "--days",
            type=int,
            default=None,
            help="keep this many days of traces (default: HAKI_TRACE_RETENTION_DAYS; 0 keeps all)",
        )
        parser.add_argument("--batch-size", type=int, default=PRUNE_BATCH_SIZE, help="traces per transaction")
        parser.add_argument("--dry-run", action="store_true", help="count what would be deleted, delete nothing")

    def handle(self, *args, days, batch_size, dry_run, **options):
        days = settings.HAKI_TRACE_RETENTION_DAYS if days is None else days
        if days < 0:
            raise CommandError("--days: expected a number of days, or 0 to keep traces forever")
        if batch_size < 1:
            raise CommandError("--batch-size: expected at least 1")
        if days == 0:
            self.stdout.write("retention is 0 days (keep forever): nothing pruned")
            return
        before = timezone.now() - timedelta(days=days)
        counts = traces_prune(before=before, batch_size=batch_size, dry_run=dry_run)
        verb = "would delete" if dry_run else "deleted"
        batches = "" if dry_run else f" in {counts['batches']} batches"
        self.stdout.write(
            f"{verb} {counts['traces']} traces and {counts['decisions']} decisions recorded before "
            f"{before.isoformat(timespec='seconds')}{batches}"
        )
