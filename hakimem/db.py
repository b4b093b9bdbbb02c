"""Raw SQL results as plain data, for the selectors whose queries the ORM cannot express."""
from __future__ import annotations

import json

from django.db import connection


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
