"""Raw SQL results as plain data, for the selectors whose queries the ORM cannot express."""

from __future__ import annotations

import json

from django.db import connection
from psycopg import sql as pg_sql


def with_tables(template: str, **models) -> str:
    """`template` with each {name} replaced by that model's table, quoted as an identifier: SQL that reads
    another app's tables takes their names from its models rather than spelling them. Other braces in the
    template must be doubled ('{{}}'); %(name)s parameters pass through for the driver."""
    tables = {name: pg_sql.Identifier(model._meta.db_table) for name, model in models.items()}
    return pg_sql.SQL(template).format(**tables).as_string()


def dict_rows(cursor, *, json_columns=()) -> list[dict]:
    """The rows of the cursor's last statement as {column: value}.

    Django's psycopg setup hands jsonb over as text (its JSONField decodes it itself), so raw SQL decodes the
    jsonb columns it names in json_columns; "{}", the common case, skips the parser."""
    names = [c.name for c in cursor.description]
    rows = [dict(zip(names, row)) for row in cursor.fetchall()]
    for name in json_columns:
        for row in rows:
            value = row[name]
            if isinstance(value, str):
                row[name] = {} if value == "{}" else json.loads(value)
    return rows


def fetch_dicts(sql, params, *, json_columns=()) -> list[dict]:
    """Run one statement on the request's connection; its rows as dict_rows gives them."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return dict_rows(cursor, json_columns=json_columns)


# The least exponent whose exp() is not 0 in double precision: exp(-745) is 5e-324, the smallest subnormal, and
# PostgreSQL raises `value out of range: underflow` where exp() returns 0 (past about -745.13). An item dated 61
# years back decays that far with a time constant of 30 days, one a day old with a replay's 0.01 day.
DECAY_MIN_EXPONENT = -745


def decay_sql(later: str, earlier: str, tau_param: str) -> str:
    """exp(-age / tau) in float8, age = `later` - `earlier` in seconds (0 when negative), tau the parameter named
    `tau_param` (seconds): the recency of an item, the decay of an access count. The exponent stops at
    DECAY_MIN_EXPONENT, so no date and no tau fails the statement; where exp() did not fail, the value is the same."""
    return (
        f"exp(greatest(-greatest(date_part('epoch', {later} - {earlier}), 0) / %({tau_param})s, {DECAY_MIN_EXPONENT}))"
    )
