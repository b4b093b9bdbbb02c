"""manage.py citus_distribute: distribute the migrated (or restored) schema of DATABASE_URL, a Citus coordinator, by
project (docs/scaling.md): the statements of hakimem.distribution, each printed as it runs, then the database settings
every worker connection needs and the functions that read the planner's statistics from the shards (hakimem.citus).
Run again, it sets the settings and replaces the functions alone: the tables are distributed once."""

from __future__ import annotations

import time

from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from hakimem.citus import stats_functions_sql
from hakimem.distribution import DISTRIBUTED, database_settings_sql, distribute_sql


class Command(BaseCommand):
    help = "Distribute the schema by project on a Citus coordinator (create_distributed_table, co-located)."

    def handle(self, *args, **options):
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_extension WHERE extname = 'citus'")
            if not cursor.fetchone():
                raise CommandError("the database has no citus extension: DATABASE_URL must name a Citus coordinator")
            cursor.execute("SELECT 1 FROM pg_dist_partition WHERE logicalrelid = %s::regclass", [DISTRIBUTED[0]])
            distributed = cursor.fetchone() is not None
        if distributed:
            self.stdout.write(
                f"{DISTRIBUTED[0]} is already distributed: only the database settings and the statistics' functions"
            )
        statements = ([] if distributed else distribute_sql()) + database_settings_sql(connection.settings_dict["NAME"])
        statements += stats_functions_sql()
        started = time.monotonic()
        # Statement by statement, outside a transaction: create_distributed_table commits its own shards.
        with connection.cursor() as cursor:
            for statement in statements:
                begun = time.monotonic()
                cursor.execute(statement)
                self.stdout.write(f"{statement.strip().splitlines()[0]}  ({time.monotonic() - begun:.2f} s)")
        self.stdout.write(
            f"{len(statements)} statements in {time.monotonic() - started:.1f} s; new connections "
            "take the database settings"
        )
