"""python manage.py extraction_worker [--concurrency N] [--once]

Runs the fact-extraction jobs (ingest/tasks.py) queued by event writes when HAKI_EXTRACTOR_URL is set: procrastinate's
worker on the `extraction` queue, with its own connections to the configured database (DATABASE_URL or the embedded
server). The same as `manage.py procrastinate worker --queues extraction`, with hakimem's defaults. Stop it with
SIGINT or SIGTERM: it finishes the job in hand first.
"""

from __future__ import annotations

import logging
import threading

from django.core.management.base import BaseCommand
from django.db import DatabaseError, connection
from django.utils import timezone
from procrastinate.exceptions import ConnectorException

from ingest import extraction
from ingest.tasks import QUEUE

logger = logging.getLogger("hakimem.extraction")


# A worker killed in the middle of a job (out of memory, SIGKILL, the machine restarted) leaves the job `doing` with
# nobody to finish it. Procrastinate calls such a job stalled once its worker's heartbeat (sent every 10 s) is
# STALLED_AFTER seconds old; a worker puts its queues' stalled jobs back in the queue when it starts and every
# STALLED_CHECK seconds. Running a job again is safe: a write job's transaction was rolled back with its worker and the
# job is still pending; an extraction job finds its event no longer pending, or its facts de-duplicated.
STALLED_AFTER = 30
STALLED_CHECK = 60


def stalled_jobs_retry(queues: tuple[str, ...]) -> list[int]:
    """Put the stalled jobs of `queues` back in their queue, to run now; returns their ids."""
    from procrastinate import sql
    from procrastinate.contrib.django import app

    retried = []
    for queue in queues:
        # procrastinate's own statement (JobManager.get_stalled_jobs runs it, asynchronously only)
        stalled = app.connector.get_sync_connector().execute_query_all(
            query=sql.queries["select_stalled_jobs_by_heartbeat"],
            queue=queue,
            task_name=None,
            seconds_since_heartbeat=STALLED_AFTER,
        )
        for row in stalled:
            try:
                app.job_manager.retry_job_by_id(row["id"], retry_at=timezone.now())
            except ConnectorException:  # another worker retried it first, or it ended meanwhile
                continue
            logger.warning("job %s of queue %s was stalled (its worker stopped): queued again", row["id"], queue)
            retried.append(row["id"])
    return retried


def _retry_stalled_jobs_every(seconds: float, queues: tuple[str, ...], stop: threading.Event) -> None:
    while not stop.wait(seconds):
        try:
            stalled_jobs_retry(queues)
        except (ConnectorException, DatabaseError) as exc:  # the database out of reach: the next round tries again
            logger.warning("stalled jobs not checked: %s", type(exc).__name__)
        finally:
            connection.close()  # this thread's own connection, not kept open between rounds


def run_worker(*, concurrency: int = 1, once: bool = False, queues: tuple[str, ...] = (QUEUE,)) -> None:
    """Process the extraction queue (or `queues`); with `once`, return when it is empty (scripts and tests). The
    queues' stalled jobs are queued again first, and every STALLED_CHECK seconds while a worker that waits runs."""
    from procrastinate.contrib.django import app

    stalled_jobs_retry(queues)
    stop = threading.Event()
    if not once:
        threading.Thread(
            target=_retry_stalled_jobs_every, args=(STALLED_CHECK, queues, stop), name="stalled-jobs", daemon=True
        ).start()
    worker_app = app.with_connector(app.connector.get_worker_connector())
    try:
        worker_app.run_worker(
            queues=list(queues),
            concurrency=concurrency,
            wait=not once,
            install_signal_handlers=not once,
            listen_notify=not once,
            delete_jobs="successful",
        )
    finally:
        stop.set()


class Command(BaseCommand):
    help = "Run the fact-extraction worker (procrastinate, queue 'extraction')."

    def add_arguments(self, parser):
        parser.add_argument("--concurrency", type=int, default=1, help="jobs run at once (threads)")
        parser.add_argument("--once", action="store_true", help="process what is queued, then exit")

    def handle(self, *args, concurrency: int, once: bool, **options):
        if not extraction.enabled():
            logger.warning("HAKI_EXTRACTOR_URL is not set: queued events will be marked skipped")
        run_worker(concurrency=concurrency, once=once)
