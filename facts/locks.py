"""A scope's writers' lock: every write that touches a scope takes it first, so writers of one subject are
serialised (two requests writing the same fact at once produce one row, and conflict detection always sees the
facts committed before it), and an erasure, which holds it too, never misses a row committed meanwhile."""

from __future__ import annotations

from django.db import connection


def lock_scopes(scopes) -> None:
    with connection.cursor() as cursor:
        for project_id, subject_id in sorted(set(scopes)):
            cursor.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s || chr(31) || %s, 0))", [project_id, subject_id]
            )


def try_lock_scope(project_id: str, subject_id: str) -> bool:
    """The scope's writers' lock when no writer holds it, without waiting; False when one does."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_try_advisory_xact_lock(hashtextextended(%s || chr(31) || %s, 0))", [project_id, subject_id]
        )
        return cursor.fetchone()[0]
