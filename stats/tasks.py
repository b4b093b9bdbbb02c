"""The rollup's periodic job (stats/rollup.py) on procrastinate's `stats` queue, for deployments that run a worker
rather than cron: `python manage.py procrastinate worker --queues stats`. Five minutes past the rollup's lag
after each hour, so the hour that just closed is rolled up."""
from __future__ import annotations

from procrastinate.contrib.django import app

from stats.rollup import stats_rollup

QUEUE = "stats"


@app.periodic(cron="15 * * * *")
@app.task(name="stats.rollup", queue=QUEUE, queueing_lock="stats.rollup")
def rollup(timestamp: int) -> None:
    stats_rollup()
