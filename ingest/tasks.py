"""The extraction queue: procrastinate jobs in the same PostgreSQL (tables procrastinate_*), found by
procrastinate's Django app (it imports every app's `tasks` module). A job is deferred in the transaction that
writes its event (ingest.services.event_ingest), so an event is never queued without being stored nor
stored pending without being queued. A worker runs them:

    python manage.py extraction_worker          # or procrastinate's own: manage.py procrastinate worker -q extraction

A job whose extractor keeps failing at the transport level (after its one immediate retry) runs again
HAKI_EXTRACTOR_RETRY_WAIT seconds later, QUEUE_RUNS times in all; timeouts and invalid answers are final.
A job run twice (a worker killed after writing the facts) writes nothing twice: the event is no longer
pending, or its facts are answered by the write path's de-duplication.

The `writes` queue runs the heavy batches of facts that POST /v1/facts accepted as jobs (ingest/writes.py):

    python manage.py write_worker               # or: manage.py procrastinate worker -q writes
"""

from __future__ import annotations

from django.conf import settings
from django.db import InterfaceError, OperationalError
from procrastinate import RetryDecision, RetryStrategy
from procrastinate.contrib.django import app
from procrastinate.retry import BaseRetryStrategy

from ingest.extraction import ExtractorTransportError, event_extract
from ingest.writes import QUEUE as WRITE_QUEUE
from ingest.writes import fact_write_job_run

QUEUE = "extraction"
QUEUE_RUNS = 3  # a job's runs at most: the first and two retries, each making up to two calls


class TransportRetry(BaseRetryStrategy):
    """Retry a job on a transport error only, after HAKI_EXTRACTOR_RETRY_WAIT seconds (read at each failure, so
    an operator's change holds without a redeploy of the task code)."""

    def get_retry_decision(self, *, exception, job):
        if not isinstance(exception, ExtractorTransportError) or job.attempts + 1 >= QUEUE_RUNS:
            return None
        return RetryDecision(retry_in={"seconds": int(settings.HAKI_EXTRACTOR_RETRY_WAIT)})


# The task keeps its first name: jobs already queued name it (procrastinate_jobs.task_name).
@app.task(name="facts.extract_event", queue=QUEUE, retry=TransportRetry(), pass_context=True)
def extract_event(context, event_id: str) -> None:
    event_extract(event_id=event_id, final_attempt=context.job.attempts + 1 >= QUEUE_RUNS)


# A heavy batch of facts (ingest.writes): a run records its outcome, but a database out of reach cannot: the queue
# tries again a minute later, five runs in all.
@app.task(
    name="facts.write_batch",
    queue=WRITE_QUEUE,
    retry=RetryStrategy(max_attempts=5, wait=60, retry_exceptions={OperationalError, InterfaceError}),
)
def write_facts(job_id: str, project_id: str) -> None:
    fact_write_job_run(job_id=job_id, project_id=project_id)
