"""How each table of the database would be placed on a Citus cluster (docs/scaling.md): distributed by project,
a reference table copied to every node, or a local table kept on the coordinator. Every table must be named here:
tests/hakimem/test_distribution.py reads the catalog and fails on a table no list names, and checks the rules
a distributed table must follow (project_id in its primary key and in every unique index, foreign keys between
distributed tables that hold project_id on both sides).

Nothing here runs at request time: these are the operator's and the tests' lists; distribute_sql() and
database_settings_sql() write the statements `manage.py citus_distribute` runs on a Citus coordinator holding a
migrated or restored database.
"""

from __future__ import annotations

DISTRIBUTION_COLUMN = "project_id"

# Distributed by project_id, all in one co-location group: a project's rows of every table are on the same node,
# so a statement that filters every scoped table it reads on one project runs on one shard. The first table is the
# group's anchor (the others are co-located with it); a table comes after the tables its foreign keys reference.
DISTRIBUTED = (
    "facts_project",
    "facts_event",
    "facts_fact",
    "facts_conflictset",
    "facts_conflictmember",
    "facts_consent",
    "facts_identityblock",
    "facts_procedure",
    "facts_scopewrite",
    "facts_scopewordcounts",
    "facts_scopeword",
    "traces_trace",
    "traces_decision",
    "traces_itemaccess",
    "context_consolidationmark",
    "stats_rollupmark",
    "stats_slicetotals",
    "stats_hourtotals",
    "stats_hourlatencies",
    "stats_daylatencies",
    "stats_subjectday",
    "stats_factserved",
)

# Copied to every node. None today: the only small shared tables are read alone, never joined with the memory
# store, and a local table on the coordinator serves that without writing each change to every node.
REFERENCE: dict[str, str] = {}

# On the coordinator only: tables no project owns, or read before the project is known, never joined with a
# distributed table on the hot path.
LOCAL = {
    "hakimem_apikey": "holds a project_id, but a request finds its key by key_hash (unique over every project) "
    "before it knows the project",
    "hakimem_staffprojectaccess": "holds a project_id, but is read by user (the admin's and stats pages' scope)",
    "hakimem_ratecounter": "rate-limit counters per key, user or address, not per project (UNLOGGED)",
    "facts_reembedrun": "one row per `manage.py reembed` run, over every project",
    "ingest_factwritejob": "holds a project_id, but is keyed by its job id alone and read by it (GET /v1/jobs/{id}, "
    "the write worker's task): a heavy batch's row, written and read once beside the queue that runs it",
    "django_migrations": "Django's own",
    "django_content_type": "Django's own",
    "django_session": "the admin's sessions",
    "django_admin_log": "the admin's history, by user; erasure deletes a scope's entries (docs/scaling.md)",
    "auth_user": "staff accounts",
    "auth_group": "staff roles",
    "auth_permission": "Django's own",
    "auth_group_permissions": "Django's own",
    "auth_user_groups": "Django's own",
    "auth_user_user_permissions": "Django's own",
    "procrastinate_jobs": "the extraction queue (LISTEN/NOTIFY and its own functions)",
    "procrastinate_events": "the extraction queue",
    "procrastinate_periodic_defers": "the extraction queue",
    "procrastinate_workers": "the extraction queue",
}

# The foreign keys between distributed tables (facts/migrations/0012_project_in_keys): dropped before the tables are
# distributed and added again after, as Citus's documentation advises for tables that already hold rows.
COMPOSITE_FOREIGN_KEYS = (
    ("facts_fact", "facts_fact_superseded_by_same_project", "superseded_by_id", "facts_fact"),
    ("facts_fact", "facts_fact_source_event_same_project", "source_event_id", "facts_event"),
    ("facts_conflictmember", "facts_conflictmember_set_same_project", "conflict_set_id", "facts_conflictset"),
    ("facts_conflictmember", "facts_conflictmember_fact_same_project", "fact_id", "facts_fact"),
)


# The statement triggers that record each scope's writes for read replicas (facts/migrations/0011_scope_writes):
# (table, trigger). Citus refuses to distribute a table that has triggers unless citus.enable_unsafe_triggers is
# on, and whether it then runs these (statement-level, with a transition table, writing another distributed
# table) on the shards was not tested: the script drops them, and docs/scaling.md says how a cluster that wants
# read-your-writes on replicas could put them back.
SCOPE_WRITE_TRIGGERS = tuple(
    (table, f"scope_written_{event}")
    for table in (
        "facts_fact",
        "facts_event",
        "facts_conflictset",
        "facts_consent",
        "facts_identityblock",
        "facts_procedure",
        "facts_project",
    )
    for event in ("insert", "update", "delete")
)


def policies_as_migrated_sql() -> list[str]:
    """Each distributed table's row security policies made again as its migrations write them
    (hakimem.rowsecurity.enable_sql). A restored dump's policies read `(project_id)::text = current_setting(...)`: pg_dump
    prints the implicit cast, and the restore makes it an explicit one. Under such a policy Citus 14 finds no project
    in a request's statements that are not a single table's (a subquery, a join): it sends them to all 32 shards or
    refuses them ("complex joins are only supported when all distributed tables are co-located..."), the consent gate of
    every context call among them. Made again before the tables are distributed, the policies are those of a migrated
    database on every shard."""
    from hakimem.rowsecurity import disable_sql, enable_sql

    return [sql for t in DISTRIBUTED for sql in disable_sql(t)[:2] + enable_sql(t)]


def _unless_placed(table: str) -> str:
    # A one-time filter: the function is not called for a table a run stopped partway already placed.
    return f" WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = '{table}'::regclass)"


def distribute_sql() -> list[str]:
    """The statements that distribute a migrated or restored database on a Citus coordinator, in order
    (`manage.py citus_distribute`; run on a cluster by tests/citus/). Each can run again after a run that stopped
    partway (a table already distributed is skipped, what is dropped is dropped if it exists, the foreign keys are
    dropped before they are added back), so the whole list runs again until the last foreign key is back."""
    anchor = DISTRIBUTED[0]
    # Citus refuses any trigger statement on a distributed table ("triggers are not supported on distributed tables"),
    # a DROP TRIGGER IF EXISTS too: only on a table not yet distributed.
    statements = [
        f"DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = '{t}'::regclass) THEN "
        f"DROP TRIGGER IF EXISTS {trigger} ON {t}; END IF; END $$"
        for t, trigger in SCOPE_WRITE_TRIGGERS
    ]
    statements += policies_as_migrated_sql()
    statements += [f"ALTER TABLE {t} DROP CONSTRAINT IF EXISTS {name}" for t, name, _, _ in COMPOSITE_FOREIGN_KEYS]
    statements.append(f"SELECT create_distributed_table('{anchor}', '{DISTRIBUTION_COLUMN}')" + _unless_placed(anchor))
    statements += [
        f"SELECT create_distributed_table('{t}', '{DISTRIBUTION_COLUMN}', colocate_with => '{anchor}')"
        + _unless_placed(t)
        for t in DISTRIBUTED[1:]
    ]
    statements += [f"SELECT create_reference_table('{t}')" + _unless_placed(t) for t in REFERENCE]
    # create_distributed_table copies a table's rows into its shards and leaves them on the coordinator, unseen but
    # on disk (a restored store's size again): removed once every table is distributed, before the foreign keys come
    # back (the truncation cascades over the coordinator's local copies only). A no-op on an empty schema.
    statements += [f"SELECT truncate_local_data_after_distributing_table('{t}')" for t in (*DISTRIBUTED, *REFERENCE)]
    statements += [
        f"ALTER TABLE {t} ADD CONSTRAINT {name} FOREIGN KEY ({column}, {DISTRIBUTION_COLUMN})"
        f" REFERENCES {target} (id, {DISTRIBUTION_COLUMN}) DEFERRABLE INITIALLY DEFERRED"
        for t, name, column, target in COMPOSITE_FOREIGN_KEYS
    ]
    # The shards are new tables on the workers, never analysed: until autovacuum gets to them the context path's
    # statistics (read from the shards, hakimem/citus.py) are empty and its plans those of an unknown size (a restored
    # store's packets differed from one server's in every call). ANALYZE on the coordinator runs on every shard.
    statements += [f"ANALYZE {t}" for t in (*DISTRIBUTED, *REFERENCE)]
    return statements


# Set on the database (ALTER DATABASE ... SET), so that every connection the coordinator opens to a worker has them:
# a session's SET and set_config() stay on the coordinator, and only SET LOCAL is passed on, with
# citus.propagate_set_commands = 'local' (which the request's project needs: hakimem/rowsecurity.py). The hnsw values
# are those the retrieval path sets per session (context/retrieval.py; tests/citus checks they agree).
DATABASE_SETTINGS = {
    "citus.propagate_set_commands": "local",
    # The statements that give a row's id without its project (the admin's pages, the ORM's joins by id: docs/scaling.md
    # lists them) join shards of two tables on a column other than project_id: refused unless repartitioned.
    "citus.enable_repartition_joins": "on",
    "hnsw.iterative_scan": "relaxed_order",
    "hnsw.ef_search": "256",
    "hnsw.max_scan_tuples": "20000",
}


def distribution_done_sql() -> str:
    """A statement true once distribute_sql() has run to its end on the database: every table placed and the last
    statements that change the schema, the composite foreign keys' return, done (its ANALYZEs aside)."""
    placed = ", ".join(f"'{t}'" for t in (*DISTRIBUTED, *REFERENCE))
    keys = ", ".join(f"'{name}'" for _, name, _, _ in COMPOSITE_FOREIGN_KEYS)
    return (
        f"SELECT (SELECT count(*) FROM pg_dist_partition WHERE logicalrelid::text IN ({placed})) = "
        f"{len(DISTRIBUTED) + len(REFERENCE)} AND (SELECT count(*) FROM pg_constraint WHERE conname IN ({keys})) = "
        f"{len(COMPOSITE_FOREIGN_KEYS)}"
    )


def database_settings_sql(database: str) -> list[str]:
    """ALTER DATABASE statements for DATABASE_SETTINGS (Citus propagates them to the workers' databases)."""
    return [f"ALTER DATABASE \"{database}\" SET {name} = '{value}'" for name, value in DATABASE_SETTINGS.items()]


def match_leakproof_sql() -> list[str]:
    """The full-text match made LEAKPROOF on the coordinator and on each worker's database: Citus does not propagate a
    pg_catalog function's attribute, and a restore does not hold it. Without it a request's lexical leg filters the
    scope's rows on the shard instead of reading the GIN index under row security (a 100k-fact scope's retrieval
    statement took 104 ms as the API role against 26 ms as the owner)."""
    from hakimem.rowsecurity import MATCH_LEAKPROOF_SQL

    # run_command_on_workers reports a worker's failure as a row: raised here, so the command fails with it.
    on_workers = (
        "DO $do$ DECLARE r record; BEGIN FOR r IN SELECT * FROM run_command_on_workers("
        f"$${MATCH_LEAKPROOF_SQL}$$) LOOP IF NOT r.success THEN RAISE EXCEPTION 'worker %:%: %', r.nodename, "
        "r.nodeport, r.result; END IF; END LOOP; END $do$"
    )
    return [MATCH_LEAKPROOF_SQL, on_workers]
