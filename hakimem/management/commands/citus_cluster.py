"""manage.py citus_cluster start|add-worker|stop|status|url: a Citus cluster on this machine (a coordinator and two
workers) for tests and benchmarks, built and started on demand (hakimem/citus.py, docs/scaling.md). `start` prints the
DATABASE_URL of its coordinator; then `manage.py migrate` and `manage.py citus_distribute` with that DATABASE_URL
(`make citus` runs all three). `add-worker` starts and registers one worker more; `manage.py citus_distribute` then
sets the database settings on it too, and `SELECT citus_rebalance_start()` moves shards to it."""

from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from hakimem import citus


class Command(BaseCommand):
    help = "Start, grow, stop or report a local Citus cluster (coordinator + 2 workers) for tests and benchmarks."

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["start", "add-worker", "stop", "status", "url"])
        parser.add_argument(
            "--dir",
            type=Path,
            default=Path(os.environ.get("HAKI_CITUS_DIR") or settings.VAR_DIR / "citus"),
            help="the nodes' data folders (default var/citus, or HAKI_CITUS_DIR)",
        )
        parser.add_argument(
            "--port",
            type=int,
            default=int(os.environ.get("HAKI_CITUS_PORT") or citus.DEFAULT_PORT),
            help="the coordinator's port; the workers take the next ones",
        )
        parser.add_argument(
            "--source",
            type=Path,
            default=Path(settings.BASE_DIR).parent / "shared" / "vendor" / "citus-14.0.1.tar.gz",
            help="Citus's source archive, read in place when Citus is not yet installed",
        )
        parser.add_argument("--build-dir", type=Path, default=Path(settings.VAR_DIR) / "citus-build")
        parser.add_argument(
            "--shared-buffers",
            default=os.environ.get("HAKI_CITUS_SHARED_BUFFERS") or None,
            help="start: each node's shared_buffers for this start (default 256MB, or HAKI_CITUS_SHARED_BUFFERS); "
            "a benchmark's worker holds a whole project's shard",
        )

    def handle(
        self, *args, action: str, dir: Path, port: int, source: Path, build_dir: Path, shared_buffers, **options
    ):
        base = dir.resolve()
        try:
            if action == "start":
                if not citus.citus_installed():
                    citus.citus_build(source, build_dir.resolve(), say=self.stderr.write)
                url = citus.cluster_start(base, port=port, shared_buffers=shared_buffers, say=self.stderr.write)
                self.stdout.write(f"DATABASE_URL={url}")
            elif action == "add-worker":
                added = citus.cluster_add_worker(base, port=port, say=self.stderr.write)
                self.stdout.write(f"added {added.name} on port {added.port}: it holds no shard before a rebalance")
            elif action == "stop":
                stopped = citus.cluster_stop(base, port=port)
                self.stdout.write(f"stopped: {', '.join(stopped)}" if stopped else "no node was running")
            elif action == "status":
                for line in citus.cluster_status(base, port=port):
                    self.stdout.write(line)
            else:
                self.stdout.write(citus.nodes(base, port)[0].url())
        except citus.ClusterError as exc:
            raise CommandError(str(exc)) from exc
