"""python manage.py extraction_worker [--concurrency N] [--once]

Runs the fact-extraction jobs (ingest/tasks.py) queued by event writes when HAKI_EXTRACTOR_URL is set: procrastinate's
worker on the `extraction` queue, with its own connections to the configured database (DATABASE_URL or the embedded
server). The same as `manage.py procrastinate worker --queues extraction`, with hakimem's defaults. Stop it with
SIGINT or SIGTERM: it finishes the job in hand first.
"""

from __future__ import annotations

import logging

from django.core.management.base import BaseCommand

from ingest import extraction
from ingest.tasks import QUEUE

logger = logging.getLogger("hakimem.extraction")


def run_worker(*, concurrency: int = 1, once: bool = False, queues: tuple[str, ...] = (QUEUE,)) -> None:
    """Process the extraction queue (or `queues`); with `once`, return when it is empty (scripts and tests)."""
    from procrastinate.contrib.django import app

    worker_app = app.with_connector(app.connector.get_worker_connector())
    worker_app.run_worker(
        queues=list(queues),
        concurrency=concurrency,
        wait=not once,
        install_signal_handlers=not once,
        listen_notify=not once,
        delete_jobs="successful",
    )


class Command(BaseCommand):
    help = "Run the fact-extraction worker (procrastinate, queue 'extraction')."

    def add_arguments(self, parser):
        parser.add_argument("--concurrency", type=int, default=1, help="jobs run at once (threads)")
        parser.add_argument("--once", action="store_true", help="process what is queued, then exit")

    def handle(self, *args, concurrency: int, once: bool, **options):
        if not extraction.enabled():
            logger.warning("HAKI_EXTRACTOR_URL is not set: queued events will be marked skipped")
        run_worker(concurrency=concurrency, once=once)
