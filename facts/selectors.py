"""Reads of the memory store: lists with keyset pagination, single objects by scope, version chains,
and the nearest-neighbour probe that conflict detection runs on every write."""

from __future__ import annotations

import base64
import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from datetime import timezone as dt_timezone

from django.conf import settings
from django.db import connection
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.db.models.expressions import RawSQL
from django.utils import timezone

from facts.models import (
    ConflictMember,
    ConflictSet,
    ConflictStatus,
    Consent,
    ConsentWritePolicy,
    Event,
    PROJECT_WIDE,
    Fact,
    IdentityBlock,
    Procedure,
    Project,
    Volatility,
)
from hakimem.db import fetch_dicts
from hakimem.db_router import read_connection
from hakimem.embeddings import vector_literal
from hakimem.tokens import estimate_tokens

NEIGHBOURS_PER_FACT = 8
NEIGHBOURS_EF_SEARCH = 100  # hnsw.ef_search of the write-time probe (the context path sets its own)


@dataclass(frozen=True)
class ProjectSettings:
    """A project's settings in effect: its row's, or the environment's defaults when it has none."""

    project_id: str
    consent_required: bool = False
    consent_write_policy: str = ConsentWritePolicy.REFUSE
    categories: tuple[str, ...] = ()
    conflict_policy: str = ""  # effective value: the row's, else HAKI_CONFLICT_POLICY
    stored: bool = False


def project_settings(project_id: str) -> ProjectSettings:
    project = Project.objects.filter(project_id=project_id).first()
    if project is None:
        return ProjectSettings(project_id=project_id, conflict_policy=settings.HAKI_CONFLICT_POLICY)
    return ProjectSettings(
        project_id=project_id,
        consent_required=project.consent_required,
        consent_write_policy=project.consent_write_policy,
        categories=tuple(project.categories),
        conflict_policy=project.conflict_policy or settings.HAKI_CONFLICT_POLICY,
        stored=True,
    )


def consented_categories(scopes) -> dict[tuple[str, str], set[str]]:
    """The categories each (project_id, subject_id) currently consents to."""
    scopes = set(scopes)
    found: dict[tuple[str, str], set[str]] = {scope: set() for scope in scopes}
    condition = Q()
    for project_id, subject_id in scopes:
        condition |= Q(project_id=project_id, subject_id=subject_id)
    for project_id, subject_id, category in Consent.objects.filter(condition, revoked_at__isnull=True).values_list(
        "project_id", "subject_id", "category"
    ):
        found[(project_id, subject_id)].add(category)
    return found


# On every context call: one round trip, and none of the consents' rows unless the project requires consent. The
# subquery names the project itself: Citus sends a correlated subquery on `p.project_id` to every shard.
_CONSENT_GATE_SQL = """
SELECT ARRAY(SELECT c.category FROM facts_consent c
              WHERE c.project_id = %(p)s AND c.subject_id = %(s)s AND c.revoked_at IS NULL)
  FROM facts_project p
 WHERE p.project_id = %(p)s AND p.consent_required"""


def consent_gate(*, project_id: str, subject_id: str) -> frozenset[str] | None:
    """None when the project does not require consent; else the categories the subject consents to now
    (read on every call: a revocation holds from the very next one). A context call's read: on the read replica
    when it serves the call (hakimem.db_router)."""
    with read_connection().cursor() as cursor:
        cursor.execute(_CONSENT_GATE_SQL, {"p": project_id, "s": subject_id})
        row = cursor.fetchone()
    return None if row is None else frozenset(row[0])


# The scope's write record (facts.models.ScopeWrite) and its project's, as one text (NULL: none); a read replica
# serves a context call only when this text is the same there as on the primary (hakimem.db_router.reads_for_scope).
# uses: facts_scopewrite_pkey
SCOPE_WRITTEN_SQL = """SELECT string_agg(w.subject_id || ':' || w.written_by, ',' ORDER BY w.subject_id)
  FROM facts_scopewrite w WHERE w.project_id = %(project_id)s AND w.subject_id IN (%(subject_id)s, '')"""


def consent_history(*, project_id: str, subject_id: str) -> QuerySet:
    return Consent.objects.filter(project_id=project_id, subject_id=subject_id).order_by("granted_at", "id")


class InvalidCursor(ValueError):
    pass


def encode_cursor(moment: datetime, pk) -> str:
    raw = json.dumps([moment.isoformat(), str(pk)]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        moment_text, pk = json.loads(raw)
        moment = datetime.fromisoformat(moment_text)
        if timezone.is_naive(moment):
            raise ValueError
        # A cursor is data the client holds: an id that is no UUID, or a moment beyond year 9999 in UTC, is
        # refused here rather than failing in the database.
        return moment.astimezone(dt_timezone.utc), str(uuid.UUID(pk))
    except (ValueError, TypeError, OverflowError, AttributeError, json.JSONDecodeError) as exc:
        raise InvalidCursor("cursor is not one this API issued") from exc


def keyset_page(queryset: QuerySet, *, time_field: str, cursor: str | None, limit: int) -> tuple[list, str | None]:
    """One page ordered by (time_field desc, id desc). The cursor names the last row seen, so rows
    inserted meanwhile never shift a page: no duplicates, no gaps among the rows that existed."""
    if cursor:
        moment, pk = decode_cursor(cursor)
        queryset = queryset.filter(Q(**{f"{time_field}__lt": moment}) | Q(**{time_field: moment, "id__lt": pk}))
    rows = list(queryset.order_by(f"-{time_field}", "-id")[: limit + 1])
    next_cursor = None
    if len(rows) > limit:
        rows = rows[:limit]
        last = rows[-1]
        next_cursor = encode_cursor(getattr(last, time_field), last.pk)
    return rows, next_cursor


def fact_list(*, project_id: str, subject_id: str, filters: dict) -> QuerySet:
    qs = Fact.objects.filter(project_id=project_id, subject_id=subject_id).defer("embedding", "search_vector")
    for name in ("status", "category", "kind"):
        if filters.get(name):
            qs = qs.filter(**{name: filters[name]})
    if filters.get("recorded_after"):
        qs = qs.filter(recorded_from__gt=filters["recorded_after"])
    if filters.get("recorded_before"):
        qs = qs.filter(recorded_from__lt=filters["recorded_before"])
    return qs


def fact_get(*, project_id: str, fact_id) -> Fact | None:
    return Fact.objects.filter(project_id=project_id, id=fact_id).defer("search_vector").first()


# The ids of a fact's version chain in one round trip, however long it is: earlier versions walked back through
# superseded_by (the first recorded predecessor at each step: resolving a conflict supersedes several facts by
# one), later ones forward. A walk ends before a fact it has visited (the path), where CYCLE would: Citus sends a
# CYCLE clause to the workers in a form they refuse ("column reference is ambiguous").
# -- uses: the superseded_by foreign-key index backwards, facts_fact_pkey forwards
# Every step names the fact's project (versions never cross one, facts 0012): Citus refuses a recursive CTE with no
# filter on the distribution column, and with it runs the whole statement on the project's shard.
FACT_CHAIN_SQL = """
WITH RECURSIVE earlier (id, path) AS (
    SELECT %s::uuid, ARRAY[]::uuid[]
    UNION ALL
    SELECT p.id, e.path || e.id
      FROM earlier e
     CROSS JOIN LATERAL (SELECT f.id FROM facts_fact f WHERE f.project_id = %s AND f.superseded_by_id = e.id
                          ORDER BY f.recorded_from LIMIT 1) p
     WHERE p.id <> ALL(e.path || e.id)
),
later (id, superseded_by_id, path) AS (
    SELECT f.id, f.superseded_by_id, ARRAY[]::uuid[] FROM facts_fact f WHERE f.project_id = %s AND f.id = %s
    UNION ALL
    SELECT f.id, f.superseded_by_id, l.path || l.id FROM later l JOIN facts_fact f
        ON f.project_id = %s AND f.id = l.superseded_by_id
     WHERE f.id <> ALL(l.path || l.id)
)
SELECT id FROM earlier
UNION
SELECT id FROM later
"""


def fact_history(*, fact: Fact) -> list[Fact]:
    """The whole version chain the fact belongs to, oldest first, read in one query."""
    versions = Fact.objects.filter(
        project_id=fact.project_id,
        id__in=RawSQL(FACT_CHAIN_SQL, [fact.id, fact.project_id, fact.project_id, fact.id, fact.project_id]),
    ).defer("embedding", "search_vector")
    by_id = {version.id: version for version in versions}
    previous_of: dict = {}  # fact id -> its first recorded predecessor in the chain
    for version in sorted(by_id.values(), key=lambda v: v.recorded_from, reverse=True):
        if version.superseded_by_id:
            previous_of[version.superseded_by_id] = version
    chain = [fact]
    seen = {fact.id}
    current = fact
    while (previous := previous_of.get(current.id)) is not None and previous.id not in seen:  # back to the first
        chain.insert(0, previous)
        seen.add(previous.id)
        current = previous
    current = fact
    while current.superseded_by_id and current.superseded_by_id not in seen:
        current = by_id[current.superseded_by_id]
        chain.append(current)
        seen.add(current.id)
    return chain


def volatility_cutoffs(now: datetime | None = None) -> dict[str, datetime]:
    """For each expiring volatility, the last_confirmed_at before which a fact is stale."""
    now = now or timezone.now()
    return {name: now - timezone.timedelta(days=days) for name, days in settings.HAKI_VOLATILITY_TTL_DAYS.items()}


def expired_q(now: datetime | None = None) -> Q:
    cut = volatility_cutoffs(now)
    return Q(volatility=Volatility.STABLE, last_confirmed_at__lt=cut["stable"]) | Q(
        volatility=Volatility.VOLATILE, last_confirmed_at__lt=cut["volatile"]
    )


def in_open_conflict_q() -> Q:
    # The member's and its set's project equal the fact's: each reads in the fact's project (docs/scaling.md).
    return Q(
        Exists(
            ConflictMember.objects.filter(
                project_id=OuterRef("project_id"),
                fact=OuterRef("pk"),
                conflict_set__project_id=OuterRef("project_id"),
                conflict_set__status=ConflictStatus.OPEN,
            )
        )
    )


def event_get(*, project_id: str, event_id) -> Event | None:
    return Event.objects.filter(project_id=project_id, id=event_id).defer("embedding", "search_vector").first()


def event_list(*, project_id: str, subject_id: str, filters: dict) -> QuerySet:
    qs = Event.objects.filter(project_id=project_id, subject_id=subject_id).defer("embedding", "search_vector")
    if filters.get("occurred_after"):
        qs = qs.filter(occurred_at__gt=filters["occurred_after"])
    if filters.get("occurred_before"):
        qs = qs.filter(occurred_at__lt=filters["occurred_before"])
    return qs


def conflict_list(*, project_id: str, subject_id: str | None, status: str | None) -> QuerySet:
    qs = ConflictSet.objects.filter(project_id=project_id)
    if subject_id:
        qs = qs.filter(subject_id=subject_id)
    if status:
        qs = qs.filter(status=status)
    return qs.order_by("-opened_at", "-id")


def conflict_get(*, project_id: str, conflict_id) -> ConflictSet | None:
    return ConflictSet.objects.filter(project_id=project_id, id=conflict_id).first()


def conflict_members(*, conflict_set: ConflictSet) -> list[dict]:
    """Members with their text and dates, and each one's cosine similarity to every other member."""
    rows = fetch_dicts(
        """
        SELECT f.id, f.text, f.category, f.status, f.recorded_from, f.valid_from, f.valid_to,
               f.source_event_id, m.kept, m.added_at,
               (SELECT coalesce(jsonb_object_agg(o.id::text, round((1 - (f.embedding <=> o.embedding))::numeric, 4)), '{}')
                  FROM facts_conflictmember om JOIN facts_fact o ON o.id = om.fact_id AND o.project_id = om.project_id
                 WHERE om.project_id = %(project_id)s AND om.conflict_set_id = m.conflict_set_id AND o.id <> f.id)
               AS similarities
          FROM facts_conflictmember m JOIN facts_fact f ON f.id = m.fact_id AND f.project_id = m.project_id
         WHERE m.project_id = %(project_id)s AND m.conflict_set_id = %(set_id)s
         ORDER BY f.recorded_from DESC, f.id
        """,
        {"set_id": conflict_set.id, "project_id": conflict_set.project_id},
        json_columns=["similarities"],
    )
    for row in rows:
        row["similarities"] = {k: float(v) for k, v in row["similarities"].items()}
    return rows


def fact_neighbours(
    *, project_id: str, subject_id: str, vectors: list, exclude_ids: list, k: int = NEIGHBOURS_PER_FACT
) -> list[list[tuple]]:
    """For each vector, the k nearest active facts of the scope as (id, text, similarity), in one round trip.

    -- uses: facts_fact_embedding_hnsw on large scopes (iterative scan keeps the scope filter from starving
    --       the LIMIT), facts_fact_scope_status plus an exact sort on small ones; the planner picks by the
    --       scope's row estimate, and both answers are exact enough for a similarity threshold.
    """
    if not vectors:
        return []
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        cursor.execute("SET LOCAL hnsw.ef_search = %s", [NEIGHBOURS_EF_SEARCH])  # a statement: Citus passes it on
        cursor.execute(
            """
            SELECT q.idx, n.id, n.text, n.similarity
              FROM unnest(%(vectors)s::halfvec[]) WITH ORDINALITY AS q(v, idx)
             CROSS JOIN LATERAL (
                   SELECT f.id, f.text, 1 - (f.embedding <=> q.v) AS similarity
                     FROM facts_fact f
                    WHERE f.project_id = %(project_id)s AND f.subject_id = %(subject_id)s
                      AND f.status = 'active' AND NOT (f.id = ANY(%(exclude)s::uuid[]))
                    ORDER BY f.embedding <=> q.v
                    LIMIT %(k)s) n
            """,
            {
                "vectors": [vector_literal(v) for v in vectors],
                "project_id": project_id,
                "subject_id": subject_id,
                "exclude": [str(i) for i in exclude_ids],
                "k": k,
            },
        )
        out: list[list[tuple]] = [[] for _ in vectors]
        for idx, fact_id, text, similarity in cursor.fetchall():
            out[idx - 1].append((fact_id, text, float(similarity)))
    return out


# --- identity blocks and procedures ---------------------------------------------------------------------------


def _applying_to(queryset: QuerySet, project_id: str, subject_id: str | None) -> QuerySet:
    """The rows that apply to a subject: the project-wide ones and the subject's own; without a subject, the
    project-wide ones only."""
    subjects = [PROJECT_WIDE] if subject_id is None else [PROJECT_WIDE, subject_id]
    return queryset.filter(project_id=project_id, subject_id__in=subjects)


def identity_block_list(*, project_id: str, subject_id: str | None) -> QuerySet:
    """In the order a context call serves them: project-wide first ('' sorts before any subject id), then the
    subject's, each by position then name; disabled ones included."""
    return _applying_to(IdentityBlock.objects.all(), project_id, subject_id).order_by("subject_id", "position", "name")


def identity_block_get(*, project_id: str, block_id) -> IdentityBlock | None:
    return IdentityBlock.objects.filter(project_id=project_id, id=block_id).first()


@dataclass(frozen=True)
class ServedIdentityBlock:
    """An identity block as a context call serves it."""

    id: uuid.UUID
    name: str
    text: str
    project_wide: bool
    tokens: int


def identity_blocks_for(*, project_id: str, subject_id: str) -> list[ServedIdentityBlock]:
    """The enabled blocks a context call for the subject serves, in order (identity_block_list's), in one query
    of the columns it needs. -- uses: identity_block_name_unique_in_scope (project_id, subject_id, name)"""
    rows = (
        _applying_to(IdentityBlock.objects.filter(enabled=True), project_id, subject_id)
        .order_by("subject_id", "position", "name")
        .values_list("id", "name", "text", "subject_id")
    )
    return [
        ServedIdentityBlock(
            id=block_id, name=name, text=text, project_wide=subject == PROJECT_WIDE, tokens=estimate_tokens(text)
        )
        for block_id, name, text, subject in rows
    ]


def procedure_list(*, project_id: str, subject_id: str | None, filters: dict) -> QuerySet:
    qs = _applying_to(Procedure.objects.defer("embedding", "search_vector"), project_id, subject_id)
    for name in ("status", "category"):
        if filters.get(name):
            qs = qs.filter(**{name: filters[name]})
    return qs


def procedure_get(*, project_id: str, procedure_id) -> Procedure | None:
    return Procedure.objects.filter(project_id=project_id, id=procedure_id).defer("embedding", "search_vector").first()


# Consolidation's probe for near-duplicates (facts.writes.fact_merge_duplicates): for each active fact of the
# scope recorded in a window, its k nearest active facts of the scope at least `min_similarity` alike. A fact
# becomes the near-duplicate of another only when one of them is new, so a run probes the facts recorded since
# the last one, k neighbours each: (facts probed) x k pairs, never the scope's n^2. A distance of NaN (a vector
# of zeros) fails `<=`. Keyset batches of DUPLICATE_PROBE_BATCH facts, oldest first.
# -- uses: facts_fact_scope_recorded (the window), then per fact facts_fact_embedding_hnsw on large scopes
# --       or facts_fact_scope_vectors with an exact sort on small ones, as fact_neighbours
NEAR_DUPLICATES_SQL = """
SELECT f.id, f.recorded_from, n.id, 1 - n.distance AS similarity
  FROM (SELECT f.id, f.embedding, f.recorded_from FROM facts_fact f
         WHERE f.project_id = %(project_id)s AND f.subject_id = %(subject_id)s AND f.status = 'active'
           AND (f.recorded_from, f.id) > (%(after_at)s, %(after_id)s::uuid)
         ORDER BY f.recorded_from, f.id
         LIMIT %(batch)s) f
  LEFT JOIN LATERAL (
       SELECT o.id, o.embedding <=> f.embedding AS distance
         FROM facts_fact o
        WHERE o.project_id = %(project_id)s AND o.subject_id = %(subject_id)s AND o.status = 'active' AND o.id <> f.id
        ORDER BY o.embedding <=> f.embedding
        LIMIT %(k)s) n ON n.distance <= 1 - %(min_similarity)s
"""
DUPLICATE_PROBE_BATCH = 500


def fact_near_duplicates(
    *,
    project_id: str,
    subject_id: str,
    recorded_since: datetime | None,
    min_similarity: float,
    k: int = NEIGHBOURS_PER_FACT,
) -> list[tuple]:
    """(id, id, similarity) for each pair of the scope's active facts at least `min_similarity` alike where one
    was recorded since `recorded_since` (None: any) and the other is among its k nearest; each pair once. Inside
    a transaction (the hnsw settings are SET LOCAL)."""
    after = (recorded_since or datetime.min.replace(tzinfo=dt_timezone.utc), uuid.UUID(int=0))
    pairs: dict[tuple, float] = {}
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        cursor.execute("SET LOCAL hnsw.ef_search = %s", [NEIGHBOURS_EF_SEARCH])  # a statement: Citus passes it on
        while True:
            cursor.execute(
                NEAR_DUPLICATES_SQL,
                {
                    "project_id": project_id,
                    "subject_id": subject_id,
                    "after_at": after[0],
                    "after_id": after[1],
                    "batch": DUPLICATE_PROBE_BATCH,
                    "k": k,
                    "min_similarity": min_similarity,
                },
            )
            probed = set()
            for fact_id, recorded_from, other, similarity in cursor.fetchall():
                probed.add((recorded_from, fact_id))
                if other is not None:
                    pairs[(fact_id, other) if str(fact_id) < str(other) else (other, fact_id)] = float(similarity)
            if len(probed) < DUPLICATE_PROBE_BATCH:
                return [(a, b, similarity) for (a, b), similarity in pairs.items()]
            after = max(probed, key=lambda p: (p[0], str(p[1])))
