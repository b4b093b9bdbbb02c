"""Consolidation as a periodic job of the task queue (procrastinate, ingest/tasks.py): deferred every night by
any running worker, run by a worker of the `consolidation` queue:

    python manage.py procrastinate worker --queues consolidation     # or with extraction: -q extraction,consolidation

Without such a worker nothing runs: `manage.py consolidate` from cron does the same. One job at a time
(queueing lock): a night the worker is down leaves one job waiting, not a pile.
"""

from __future__ import annotations

from procrastinate.contrib.django import app

from context.consolidation import consolidate

QUEUE = "consolidation"


@app.periodic(cron="17 3 * * *")  # 03:17 UTC: off the hour, when most deployments are quiet
@app.task(name="context.consolidate", queue=QUEUE, queueing_lock="context.consolidate")
def consolidate_periodic(timestamp: int) -> None:
    consolidate()
