"""python manage.py write_worker [--concurrency N] [--once]

Runs the heavy batches of facts that POST /v1/facts accepted as jobs (ingest/writes.py): procrastinate's worker on
the `writes` queue, with its own connections to the configured database. `make run` starts one beside gunicorn
(config/gunicorn.py) unless HAKI_WRITE_WORKER is off. Stop it with SIGINT or SIGTERM: it finishes the job in hand
first.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand

from ingest.management.commands.extraction_worker import run_worker
from ingest.writes import QUEUE


class Command(BaseCommand):
    help = "Run the worker of the heavy fact batches (procrastinate, queue 'writes')."

    def add_arguments(self, parser):
        parser.add_argument("--concurrency", type=int, default=1, help="jobs run at once (threads)")
        parser.add_argument("--once", action="store_true", help="process what is queued, then exit")

    def handle(self, *args, concurrency: int, once: bool, **options):
        run_worker(concurrency=concurrency, once=once, queues=(QUEUE,))
