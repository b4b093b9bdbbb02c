"""manage.py citus_distribute: distribute the migrated (or restored) schema of DATABASE_URL, a Citus coordinator, by
project (docs/scaling.md): the statements of hakimem.distribution, each printed as it runs, then the database settings
every worker connection needs, the full-text match made LEAKPROOF on every node, and the functions that read the
planner's statistics from the shards (hakimem.citus);
last, it lets the request roles log in on any worker where Citus copied them NOLOGIN. Run again after a run that
stopped partway, it runs every statement again and skips the tables already distributed; after a run that ended, it
sets the settings and replaces the functions alone."""

from __future__ import annotations

import time

from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from hakimem.citus import ClusterError, request_roles_let_log_in, stats_functions_sql
from hakimem.distribution import (
    DISTRIBUTED,
    database_settings_sql,
    distribute_sql,
    distribution_done_sql,
    match_leakproof_sql,
)


class Command(BaseCommand):
    help = "Distribute the schema by project on a Citus coordinator (create_distributed_table, co-located)."

    def handle(self, *args, **options):
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_extension WHERE extname = 'citus'")
            if not cursor.fetchone():
                raise CommandError("the database has no citus extension: DATABASE_URL must name a Citus coordinator")
            cursor.execute(distribution_done_sql())
            done = cursor.fetchone()[0]
            cursor.execute(
                "SELECT count(*) FROM pg_dist_partition WHERE logicalrelid::text = ANY(%s)", [list(DISTRIBUTED)]
            )
            placed = cursor.fetchone()[0]
        if done:
            self.stdout.write("already distributed: only the database settings and the statistics' functions")
        elif placed:
            self.stdout.write(
                f"{placed} of {len(DISTRIBUTED)} tables already distributed (a run stopped partway): every statement "
                "again, those tables' create_distributed_table skipped"
            )
        statements = ([] if done else distribute_sql()) + database_settings_sql(connection.settings_dict["NAME"])
        statements += match_leakproof_sql() + stats_functions_sql()
        started = time.monotonic()
        # Statement by statement, outside a transaction: create_distributed_table commits its own shards.
        with connection.cursor() as cursor:
            for statement in statements:
                begun = time.monotonic()
                cursor.execute(statement)
                self.stdout.write(f"{statement.strip().splitlines()[0]}  ({time.monotonic() - begun:.2f} s)")
            try:
                for line in request_roles_let_log_in(cursor):
                    self.stdout.write(line)
            except ClusterError as exc:
                raise CommandError(f"the request roles on the workers: {exc}") from exc
        self.stdout.write(
            f"{len(statements)} statements in {time.monotonic() - started:.1f} s; new connections "
            "take the database settings"
        )
