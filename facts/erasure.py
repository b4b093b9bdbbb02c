"""Erasure of the store's rows: a subject's whole scope, a project, or one category of a subject's facts (a revoked
consent), each in one transaction under the scope's writers' lock, answered by a receipt of counts per table."""
from __future__ import annotations

from typing import Callable

from django.contrib.contenttypes.models import ContentType
from django.db import connection, transaction
from psycopg import sql

from facts.locks import lock_scopes
from facts.models import ConflictMember, ConflictSet, Event, Fact, FactStatus, IdentityBlock, Procedure, ScopeWordCounts
from facts.scope_graphs import scope_graph_drop, scope_graph_exists
from facts.scope_words import scope_words_count


# Other apps (traces) hold rows about a subject too. They register an eraser here so that erasure stays
# one transaction without this app importing them (the layers: hakimem <- facts <- traces <- context, stats).
# An eraser gets (project_id, subject_id), subject_id None for a whole project, and returns counts per table.
Eraser = Callable[[str, str | None], dict[str, int]]
_ERASERS: list[tuple[str, Eraser]] = []


def register_eraser(name: str, eraser: Eraser) -> None:
    if name not in {n for n, _ in _ERASERS}:
        _ERASERS.append((name, eraser))


def erase_condition(subject_id: str | None, alias: str) -> str:
    """The rows an erasure deletes, on the table aliased `alias`: the project (%(p)s) and, unless the whole
    project goes, the subject (%(s)s)."""
    condition = "{t}.project_id = %(p)s" + ("" if subject_id is None else " AND {t}.subject_id = %(s)s")
    return sql.SQL(condition).format(t=sql.Identifier(alias)).as_string()


def _erase(project_id: str, subject_id: str | None) -> dict[str, int]:
    counts: dict[str, int] = {}
    for _, eraser in _ERASERS:  # rows that point at facts go first; the traces' eraser locks out trace writes
        counts.update(eraser(project_id, subject_id))
    content_types = ContentType.objects.get_for_models(Fact, ConflictSet, Event, IdentityBlock, Procedure)
    params = {
        "p": project_id, "s": subject_id, "ct_fact": content_types[Fact].id,
        "ct_conflict_set": content_types[ConflictSet].id, "ct_event": content_types[Event].id,
        "ct_identity_block": content_types[IdentityBlock].id, "ct_procedure": content_types[Procedure].id,
    }
    # Plain DELETEs rather than the ORM's collector: it would load every row to emulate ON DELETE in Python.
    # References inside the scope (superseded_by, source_event) disappear together; Django's foreign keys are
    # checked at commit. The admin's log names the rows it is about by id, without a foreign key, and holds their
    # text (object_repr: a fact's first 80 characters) and the curators' notes (change_message of a resolved
    # conflict set): its entries about the scope's rows go first, while those rows still say which they are.
    statements = [
        ("consents", "DELETE FROM facts_consent c WHERE " + erase_condition(subject_id, "c")),
        ("conflict_members", "DELETE FROM facts_conflictmember m USING facts_conflictset c"
         " WHERE m.conflict_set_id = c.id AND m.project_id = c.project_id AND " + erase_condition(subject_id, "c")),
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
        ("scope_writes", "DELETE FROM facts_scopewrite w WHERE " + erase_condition(subject_id, "w") + " AND w.subject_id <> ''"),
    ]
    with connection.cursor() as cursor:
        cursor.execute(_ADMIN_LOG_ERASE_SQL.format(
            " UNION ALL ".join(f"SELECT %({ct})s::integer, {alias}.id::text FROM {table} {alias} WHERE "
                               + erase_condition(subject_id, alias) for ct, table, alias in _LOGGED_TABLES)), params)
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


# Erasing some facts of a scope (a revoked category) reaches the rows other apps hold about those facts: the
# traces whose decisions name them (their rendered text may quote them). Registered like the erasers above.
FactEraser = Callable[[str, str, list], dict[str, int]]
_FACT_ERASERS: list[tuple[str, FactEraser]] = []


def register_fact_eraser(name: str, eraser: FactEraser) -> None:
    if name not in {n for n, _ in _FACT_ERASERS}:
        _FACT_ERASERS.append((name, eraser))


def category_erase(project_id: str, subject_id: str, category: str) -> dict[str, int]:
    """Delete every version of the scope's facts of `category`, what names them elsewhere, and every conflict
    set that held one (its signal detail may quote the text: the set goes whole, and its other members are no
    longer blocked by it). A fact of another category that one of them superseded loses its successor: it is
    marked retracted instead. Runs under the scope's lock."""
    fact_ids = list(Fact.objects.filter(project_id=project_id, subject_id=subject_id, category=category)
                    .values_list("id", flat=True))
    counts = {"facts": 0, "conflict_sets": 0, "conflict_members": 0, "successors_lost": 0, "admin_log_entries": 0}
    if not fact_ids:
        return counts
    for _, eraser in _FACT_ERASERS:
        counts.update(eraser(project_id, subject_id, fact_ids))
    set_ids = list(ConflictMember.objects.filter(project_id=project_id, fact_id__in=fact_ids)
                   .values_list("conflict_set_id", flat=True).distinct())
    counts["successors_lost"] = (Fact.objects.filter(project_id=project_id, superseded_by_id__in=fact_ids)
                                 .exclude(id__in=fact_ids).update(status=FactStatus.RETRACTED, superseded_by=None))
    # Plain DELETEs: the ORM's collector would delete a set's members again, by set id alone.
    params = {"p": project_id, "sets": set_ids, "facts": fact_ids}
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM facts_conflictmember WHERE project_id = %(p)s AND conflict_set_id = ANY(%(sets)s)",
                       params)
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
# entries about the rows the statement names, which the caller's row security lets it see.
_ADMIN_LOG_ERASE_SQL = "SELECT hakimem_admin_log_erase(coalesce(array_agg(e.ct), '{{}}'), coalesce(array_agg(e.id), '{{}}'))" \
                       " FROM ({}) AS e(ct, id)"
_LOGGED_TABLES = [("ct_fact", "facts_fact", "f"), ("ct_conflict_set", "facts_conflictset", "c"),
                  ("ct_event", "facts_event", "e"), ("ct_identity_block", "facts_identityblock", "b"),
                  ("ct_procedure", "facts_procedure", "x")]


def admin_log_erase(entries: list[tuple[int, str]]) -> int:
    """Delete the admin's log entries about these (content type id, object id) rows; how many went."""
    if not entries:
        return 0
    with connection.cursor() as cursor:
        cursor.execute("SELECT hakimem_admin_log_erase(%s, %s)", [[e[0] for e in entries], [e[1] for e in entries]])
        return cursor.fetchone()[0]


def subject_erase(*, project_id: str, subject_id: str) -> dict[str, int]:
    """Delete every row of the scope, everywhere, in one transaction, and its dedicated hnsw graph; returns the
    count per table (and of graphs dropped), the erasure's receipt.

    The transaction holds the scope's writers' lock (no fact or event of the scope is written meanwhile) and,
    through the traces' eraser, its trace lock: a context call's trace either commits before the erasure, which
    then deletes it, or is written after it and names none of the erased rows (traces.services.trace_record).

    The graph goes on its own: its definition holds the subject id, and a DROP INDEX inside the erasure's
    transaction would lock the whole facts table until it commits, so it is dropped CONCURRENTLY, which no
    transaction may hold: first when called outside one (should the erasure then fail, the scope has lost a
    speed-up, not a row); inside one (an API request's, which runs under row security as a role that does not
    own the index), right after it commits, as the connecting user."""
    inside_transaction = connection.in_atomic_block
    if not inside_transaction:
        graphs = int(scope_graph_drop(project_id=project_id, subject_id=subject_id))
    with transaction.atomic():
        # The lock before anything of the scope is read: a writer that committed before it is seen by every
        # statement below, one that comes after waits for the erasure to commit.
        lock_scopes([(project_id, subject_id)])
        if inside_transaction:
            graphs = int(scope_graph_exists(project_id=project_id, subject_id=subject_id))
            if graphs:
                transaction.on_commit(lambda: scope_graph_drop(project_id=project_id, subject_id=subject_id),
                                      robust=True)
        counts = _erase(project_id, subject_id)
    counts["scope_graphs"] = graphs
    return counts


@transaction.atomic
def project_erase(*, project_id: str) -> dict[str, int]:
    """Delete every row of every subject of a project, everywhere, in one transaction. For the benchmarks'
    own projects (scripts/), which nothing else writes meanwhile: no scope lock, and no API calls it."""
    return _erase(project_id, None)
