"""The schema can be distributed by project on Citus (docs/scaling.md, hakimem/distribution.py): read from the
catalog of the migrated database, so a table or key added by a later migration is judged too."""

import pytest
from django.db import connection, transaction

from hakimem.distribution import (
    COMPOSITE_FOREIGN_KEYS,
    DISTRIBUTED,
    DISTRIBUTION_COLUMN,
    LOCAL,
    REFERENCE,
    DATABASE_SETTINGS,
    SCOPE_WRITE_TRIGGERS,
    database_settings_sql,
    distribute_sql,
    policies_as_migrated_sql,
)

pytestmark = pytest.mark.django_db

PLACED = {
    **{t: "distributed" for t in DISTRIBUTED},
    **{t: "reference" for t in REFERENCE},
    **{t: "local" for t in LOCAL},
}


def _rows(sql: str) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return cursor.fetchall()


def _tables() -> dict[str, set[str]]:
    """Every table of the schema and its columns."""
    tables: dict[str, set[str]] = {}
    for table, column in _rows("""
        SELECT c.relname, a.attname FROM pg_class c
          JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
         WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p')"""):
        tables.setdefault(table, set()).add(column)
    return tables


def _unique_indexes() -> list[tuple[str, str, list[str], str]]:
    """(table, index, key columns, definition) of every unique index, primary keys and partial ones included;
    an expression counts as no column."""
    return _rows("""
        SELECT t.relname, i.relname,
               ARRAY(SELECT a.attname FROM unnest((x.indkey::int2[])[0:x.indnkeyatts - 1]) k
                       JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k)::text[],
               pg_get_indexdef(x.indexrelid)
          FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
         WHERE t.relnamespace = current_schema()::regnamespace AND x.indisunique""")


def _foreign_keys() -> list[tuple[str, str, list[str], str, list[str]]]:
    """(table, constraint, columns, referenced table, referenced columns), the columns in the key's order."""
    return _rows("""
        SELECT t.relname, c.conname,
               ARRAY(SELECT a.attname FROM unnest(c.conkey) WITH ORDINALITY k(n, o)
                       JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n ORDER BY k.o)::text[],
               r.relname,
               ARRAY(SELECT a.attname FROM unnest(c.confkey) WITH ORDINALITY k(n, o)
                       JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.n ORDER BY k.o)::text[]
          FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid JOIN pg_class r ON r.oid = c.confrelid
         WHERE c.contype = 'f' AND t.relnamespace = current_schema()::regnamespace""")


def test_every_table_is_placed_distributed_reference_or_local():
    # given the migrated schema
    tables = _tables()
    # then each table is named in exactly one list of hakimem/distribution.py, and every named table exists
    assert len(PLACED) == len(DISTRIBUTED) + len(REFERENCE) + len(LOCAL), "a table is in two lists"
    unplaced = sorted(set(tables) - set(PLACED))
    assert not unplaced, (
        f"{unplaced}: name each in hakimem/distribution.py (DISTRIBUTED by project_id if it holds "
        "a project's rows, else REFERENCE or LOCAL with the reason) and in docs/scaling.md"
    )
    assert not set(PLACED) - set(tables), f"named but not in the schema: {sorted(set(PLACED) - set(tables))}"
    # and a distributed table has the distribution column, not null
    for table in DISTRIBUTED:
        assert DISTRIBUTION_COLUMN in tables[table], table
    nullable = _rows(f"""
        SELECT c.relname FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
         WHERE c.relname = ANY(ARRAY{list(DISTRIBUTED)}) AND a.attname = '{DISTRIBUTION_COLUMN}' AND NOT a.attnotnull""")
    assert nullable == []


def test_a_table_holding_a_project_id_but_not_distributed_says_why():
    scoped = {t for t, columns in _tables().items() if DISTRIBUTION_COLUMN in columns}
    for table in sorted(scoped - set(DISTRIBUTED)):
        assert (REFERENCE | LOCAL).get(table), f"{table} holds project_id: distribute it, or give the reason it is not"


def test_every_primary_key_and_unique_index_of_a_distributed_table_holds_project_id():
    # Citus enforces a key of a distributed table only when it holds the distribution column
    indexes = _unique_indexes()
    wrong = [
        definition
        for table, _, columns, definition in indexes
        if table in DISTRIBUTED and DISTRIBUTION_COLUMN not in columns
    ]
    assert wrong == [], "add project_id to these keys (facts/migrations/0012_project_in_keys shows how)"
    primary = {
        table
        for (table,) in _rows("""
        SELECT t.relname FROM pg_index x JOIN pg_class t ON t.oid = x.indrelid
         WHERE x.indisprimary AND t.relnamespace = current_schema()::regnamespace""")
    }
    assert set(DISTRIBUTED) <= primary, "every distributed table has a primary key"


def test_foreign_keys_never_cross_a_project_and_follow_the_placement():
    for table, name, columns, target, target_columns in _foreign_keys():
        kinds = (PLACED.get(table), PLACED.get(target))
        if kinds == ("distributed", "distributed"):
            # between co-located tables, the key holds the distribution column on both sides, paired
            pairs = dict(zip(columns, target_columns))
            assert pairs.get(DISTRIBUTION_COLUMN) == DISTRIBUTION_COLUMN, (
                f"{name}: ({', '.join(columns)}) -> {target} ({', '.join(target_columns)}) may cross projects"
            )
        else:
            # what Citus accepts besides: local to local, distributed to reference
            assert kinds in {("local", "local"), ("distributed", "reference")}, (
                f"{name}: a foreign key from a {kinds[0]} table ({table}) to a {kinds[1]} one ({target})"
            )


def test_the_composite_foreign_keys_are_the_ones_the_distribution_script_recreates():
    found = {
        (t, name, columns[0], target)
        for t, name, columns, target, _ in _foreign_keys()
        if PLACED.get(t) == "distributed" and PLACED.get(target) == "distributed"
    }
    assert found == set(COMPOSITE_FOREIGN_KEYS)


def test_the_distribution_script_distributes_each_table_after_those_it_references():
    statements = distribute_sql()
    order = [t for t in DISTRIBUTED if any(f"'{t}'" in s and "create_distributed_table" in s for s in statements)]
    assert order == list(DISTRIBUTED)
    for table, _, _, target in COMPOSITE_FOREIGN_KEYS:
        assert DISTRIBUTED.index(target) <= DISTRIBUTED.index(table)
    # the scope-write triggers and the foreign keys are dropped before the first table is distributed; after the
    # last, the coordinator's copy of each table's rows is truncated, the foreign keys are added back, and every
    # table analysed (its shards)
    first = next(i for i, s in enumerate(statements) if "create_distributed_table" in s)
    last = max(i for i, s in enumerate(statements) if "create_distributed_table" in s)
    before, after = statements[:first], statements[last + 1 : -len(DISTRIBUTED)]
    assert statements[-len(DISTRIBUTED) :] == [f"ANALYZE {t}" for t in DISTRIBUTED]
    assert [s for s in before if "DROP TRIGGER" in s] == before[: len(SCOPE_WRITE_TRIGGERS)]
    before = [s for s in before[len(SCOPE_WRITE_TRIGGERS) :] if s not in policies_as_migrated_sql()]
    assert all("DROP CONSTRAINT" in s for s in before)
    truncated = after[: len(DISTRIBUTED)]
    assert truncated == [f"SELECT truncate_local_data_after_distributing_table('{t}')" for t in DISTRIBUTED]
    assert all("ADD CONSTRAINT" in s for s in after[len(DISTRIBUTED) :])
    assert len(before) == len(after) - len(DISTRIBUTED) == len(COMPOSITE_FOREIGN_KEYS)


def _policies() -> set[tuple]:
    # polqual and polwithcheck as stored trees: a restored dump's explicit cast shows there, not in pg_get_expr's text
    return set(
        _rows(f"""
        SELECT c.relname, p.polname, p.polcmd, p.polpermissive, p.polroles::regrole[]::text, p.polqual::text,
               p.polwithcheck::text, c.relrowsecurity
          FROM pg_policy p JOIN pg_class c ON c.oid = p.polrelid WHERE c.relname = ANY(ARRAY{list(DISTRIBUTED)})""")
    )


def test_the_policies_made_again_before_distributing_are_the_migrated_ones():
    """citus_distribute makes each distributed table's policies again (a restored dump's kept Citus from routing a
    request's joins to one shard): on a migrated database that changes nothing, and no table is left without them."""
    migrated = _policies()
    assert {(table, name) for table, name, *_ in migrated} == {
        (t, name) for t in DISTRIBUTED for name in ("api_own_project", "staff_projects")
    }
    with transaction.atomic():
        with connection.cursor() as cursor:
            for statement in policies_as_migrated_sql():
                cursor.execute(statement)
        made_again = _policies()
        transaction.set_rollback(True)
    assert made_again == migrated
    statements = distribute_sql()
    first = next(i for i, s in enumerate(statements) if "create_distributed_table" in s)
    assert set(policies_as_migrated_sql()) <= set(statements[:first])


def test_the_distribution_script_drops_every_trigger_of_a_distributed_table():
    # Citus refuses to distribute a table that has triggers (unless citus.enable_unsafe_triggers, untested)
    found = set(
        _rows(f"""
        SELECT c.relname, t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
         WHERE NOT t.tgisinternal AND c.relname = ANY(ARRAY{list(DISTRIBUTED)})""")
    )
    assert found == set(SCOPE_WRITE_TRIGGERS)
    dropped = {
        (table, trigger)
        for table, trigger in found
        for s in distribute_sql()
        if f"DROP TRIGGER IF EXISTS {trigger} ON {table};" in s
    }
    assert dropped == found


def test_the_cluster_databases_hnsw_settings_are_the_retrieval_paths():
    # On Citus the retrieval path's session settings stay on the coordinator: the database's must be the same values
    from context.retrieval import HNSW_EF_SEARCH, HNSW_MAX_SCAN_TUPLES

    assert DATABASE_SETTINGS["hnsw.ef_search"] == str(HNSW_EF_SEARCH)
    assert DATABASE_SETTINGS["hnsw.max_scan_tuples"] == str(HNSW_MAX_SCAN_TUPLES)
    assert all(s.startswith('ALTER DATABASE "hakimem" SET ') for s in database_settings_sql("hakimem"))
