"""The store's share of an erasure: a subject's whole scope, a project, or one category of a subject's facts (a
revoked consent), with their counts for the receipt. privacy.services runs each erasure across the apps, in one
transaction under the scope's writers' lock; erase_condition is the scope's condition every app's eraser uses."""

from __future__ import annotations

from django.contrib.contenttypes.models import ContentType
from django.db import connection
from psycopg import sql

from facts.models import ConflictMember, ConflictSet, Event, Fact, FactStatus, IdentityBlock, Procedure, ScopeWordCounts
from facts.scope_words import scope_words_count


def erase_condition(subject_id: str | None, alias: str) -> str:
    """The rows an erasure deletes, on the table aliased `alias`: the project (%(p)s) and, unless the whole
    project goes, the subject (%(s)s)."""
    condition = "{t}.project_id = %(p)s" + ("" if subject_id is None else " AND {t}.subject_id = %(s)s")
    return sql.SQL(condition).format(t=sql.Identifier(alias)).as_string()


def facts_erase(*, project_id: str, subject_id: str | None) -> dict[str, int]:
    """Delete the store's rows of the scope (of the whole project when subject_id is None) and the admin's log
    entries about them; the counts for the erasure's receipt. Last in the erasure (privacy.services), under the
    scope's writers' lock: the rows of other apps that point at these go first."""
    counts: dict[str, int] = {}
    content_types = ContentType.objects.get_for_models(Fact, ConflictSet, Event, IdentityBlock, Procedure)
    params = {
        "p": project_id,
        "s": subject_id,
        "ct_fact": content_types[Fact].id,
        "ct_conflict_set": content_types[ConflictSet].id,
        "ct_event": content_types[Event].id,
        "ct_identity_block": content_types[IdentityBlock].id,
        "ct_procedure": content_types[Procedure].id,
    }
    # Plain DELETEs rather than the ORM's collector: it would load every row to emulate ON DELETE in Python.
    # References inside the scope (superseded_by, source_event) disappear together; Django's foreign keys are
    # checked at commit. The admin's log names the rows it is about by id, without a foreign key, and holds their
    # text (object_repr: a fact's first 80 characters) and the curators' notes (change_message of a resolved
    # conflict set): its entries about the scope's rows go first, while those rows still say which they are.
    statements = [
        ("consents", "DELETE FROM facts_consent c WHERE " + erase_condition(subject_id, "c")),
        (
            "conflict_members",
            "DELETE FROM facts_conflictmember m USING facts_conflictset c"
            " WHERE m.conflict_set_id = c.id AND m.project_id = c.project_id AND " + erase_condition(subject_id, "c"),
        ),
        ("conflict_sets", "DELETE FROM facts_conflictset c WHERE " + erase_condition(subject_id, "c")),
        ("facts", "DELETE FROM facts_fact f WHERE " + erase_condition(subject_id, "f")),
        ("events", "DELETE FROM facts_event e WHERE " + erase_condition(subject_id, "e")),
        # A subject's own; the project-wide ones (subject_id '') go only with their project.
        ("identity_blocks", "DELETE FROM facts_identityblock b WHERE " + erase_condition(subject_id, "b")),
        ("procedures", "DELETE FROM facts_procedure x WHERE " + erase_condition(subject_id, "x")),
        ("scope_words", "DELETE FROM facts_scopeword w WHERE " + erase_condition(subject_id, "w")),
        ("scope_word_counts", "DELETE FROM facts_scopewordcounts w WHERE " + erase_condition(subject_id, "w")),
        # Last: the deletes above recorded the scope as written (facts.models.ScopeWrite), and that record names the
        # subject. The project's own record (no subject) stays, and is rewritten below.
        (
            "scope_writes",
            "DELETE FROM facts_scopewrite w WHERE " + erase_condition(subject_id, "w") + " AND w.subject_id <> ''",
        ),
    ]
    with connection.cursor() as cursor:
        cursor.execute(
            _ADMIN_LOG_ENTRIES_SQL.format(
                " UNION ALL ".join(
                    f"SELECT %({ct})s::integer, {alias}.id::text FROM {table} {alias} WHERE "
                    + erase_condition(subject_id, alias)
                    for ct, table, alias in _LOGGED_TABLES
                )
            ),
            params,
        )
        content_types, object_ids = cursor.fetchone()
        cursor.execute("SELECT hakimem_admin_log_erase(%s, %s)", [content_types, object_ids])
        counts["admin_log_entries"] = cursor.fetchone()[0]
        for name, statement in statements:
            cursor.execute(statement, params)
            counts[name] = cursor.rowcount
        # With the scope's record gone, the primary says "no record" for it, and so would a replica that has not
        # replayed the erasure but predates the scope's first recorded write. The project's record, which every
        # context call of the project compares too, tells them apart.
        cursor.execute(_PROJECT_WRITTEN_SQL, params)
    return counts


_PROJECT_WRITTEN_SQL = """
INSERT INTO facts_scopewrite AS w (project_id, subject_id, written_by) VALUES (%(p)s, '', pg_current_xact_id()::text::bigint)
ON CONFLICT (project_id, subject_id) DO UPDATE SET written_by = EXCLUDED.written_by"""


def category_fact_ids(*, project_id: str, subject_id: str, category: str) -> list:
    """Every version of the scope's facts of `category`: what revoking it with erase erases."""
    return list(
        Fact.objects.filter(project_id=project_id, subject_id=subject_id, category=category).values_list(
            "id", flat=True
        )
    )


def category_facts_erase(*, project_id: str, subject_id: str, fact_ids: list) -> dict[str, int]:
    """Delete these facts of a category (category_fact_ids) and every conflict set that held one (its signal
    detail may quote the text: the set goes whole, and its other members are no longer blocked by it). A fact of
    another category that one of them superseded loses its successor: it is marked retracted instead. Runs under
    the scope's lock, after what names the facts elsewhere went (privacy.services.consent_revoke)."""
    counts = {"facts": 0, "conflict_sets": 0, "conflict_members": 0, "successors_lost": 0, "admin_log_entries": 0}
    if not fact_ids:
        return counts
    set_ids = list(
        ConflictMember.objects.filter(project_id=project_id, fact_id__in=fact_ids)
        .values_list("conflict_set_id", flat=True)
        .distinct()
    )
    counts["successors_lost"] = (
        Fact.objects.filter(project_id=project_id, superseded_by_id__in=fact_ids)
        .exclude(id__in=fact_ids)
        .update(status=FactStatus.RETRACTED, superseded_by=None)
    )
    # Plain DELETEs: the ORM's collector would delete a set's members again, by set id alone.
    params = {"p": project_id, "sets": set_ids, "facts": fact_ids}
    with connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM facts_conflictmember WHERE project_id = %(p)s AND conflict_set_id = ANY(%(sets)s)", params
        )
        counts["conflict_members"] = cursor.rowcount
        cursor.execute("DELETE FROM facts_conflictset WHERE project_id = %(p)s AND id = ANY(%(sets)s)", params)
        counts["conflict_sets"] = cursor.rowcount
        # one statement: versions point at each other (superseded_by)
        cursor.execute("DELETE FROM facts_fact WHERE project_id = %(p)s AND id = ANY(%(facts)s)", params)
        counts["facts"] = cursor.rowcount
    # The admin's history of these facts and sets holds their text (object_repr, change messages).
    types = ContentType.objects.get_for_models(Fact, ConflictSet)
    entries = [(types[Fact].id, str(i)) for i in fact_ids] + [(types[ConflictSet].id, str(i)) for i in set_ids]
    counts["admin_log_entries"] = admin_log_erase(entries)
    # A counted scope's words are the erased facts' words too (insulin, penicillin): counted again from what is left.
    if ScopeWordCounts.objects.filter(project_id=project_id, subject_id=subject_id, items_table="facts_fact").exists():
        scope_words_count(project_id=project_id, subject_id=subject_id, table="facts_fact")
    return counts


# The admin's log cannot be read by the API role: hakimem_admin_log_erase (facts/migrations/0018) deletes the
# entries about the rows the statement names, which the caller's row security lets it see. The rows are gathered by
# a statement of their own: on Citus a statement on one project's shards runs whole on its worker, where the function
# would not find the coordinator's local table.
_ADMIN_LOG_ENTRIES_SQL = (
    "SELECT coalesce(array_agg(e.ct), '{{}}'), coalesce(array_agg(e.id), '{{}}') FROM ({}) AS e(ct, id)"
)
_LOGGED_TABLES = [
    ("ct_fact", "facts_fact", "f"),
    ("ct_conflict_set", "facts_conflictset", "c"),
    ("ct_event", "facts_event", "e"),
    ("ct_identity_block", "facts_identityblock", "b"),
    ("ct_procedure", "facts_procedure", "x"),
]


def admin_log_erase(entries: list[tuple[int, str]]) -> int:
    """Delete the admin's log entries about these (content type id, object id) rows; how many went."""
    if not entries:
        return 0
    with connection.cursor() as cursor:
        cursor.execute("SELECT hakimem_admin_log_erase(%s, %s)", [[e[0] for e in entries], [e[1] for e in entries]])
        return cursor.fetchone()[0]
