"""The rollup's periodic job (stats/rollup.py) on procrastinate's `stats` queue, for deployments that run a worker
rather than cron: `python manage.py procrastinate worker --queues stats`. Every 5 minutes, the rollup's step
(stats.rollup.SLICE): each run rolls up the slices that closed ROLLUP_LAG ago."""

from __future__ import annotations

from procrastinate.contrib.django import app

from stats.rollup import stats_rollup

QUEUE = "stats"


@app.periodic(cron="*/5 * * * *")
@app.task(name="stats.rollup", queue=QUEUE, queueing_lock="stats.rollup")
def rollup(timestamp: int) -> None:
    stats_rollup()
