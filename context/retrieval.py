"""The retrieval SQL of POST /v1/context: every query the assembler runs against the memory store.

Invariants (each query below keeps all of them; tests/context/test_retrieval_plans.py checks the plans):
1. Scope first: every query filters the exact scope `project_id = %(project_id)s AND subject_id = %(subject_id)s`.
2. Hard filters before any score: `status = 'active'` and `valid_to IS NULL OR valid_to > %(now)s` sit in the
   WHERE clause of each leg, so a retracted, superseded or no-longer-valid fact is never scored.
   Facts blocked by an open conflict set or by expired volatility are *not* filtered here: they are
   returned flagged (`in_open_conflict`, `expired`) so the trace can say why they were not served.
3. Phase 1 legs return ids only; phase 2 scores the union (at most 2 x RETRIEVAL_TOP_K rows, capped at
   CANDIDATE_LIMIT) and selects only what packing needs: never the embedding itself.
4. Parameters go through the driver; nothing is formatted into SQL text. The connection never uses
   server-side prepared statements (see hakimem/dbserver.py): generic plans lose the hnsw index.
"""
from __future__ import annotations

import json
import re
import time
import weakref
from dataclasses import dataclass
from datetime import datetime

from django.db import connection

from facts.text import STOP_WORDS
from hakimem.embeddings import vector_literal

RETRIEVAL_TOP_K = 64  # rows per phase-1 leg (dense, lexical)
CANDIDATE_LIMIT = 256  # phase-2 ceiling; items beyond it are neither scored nor traced
EPISODE_TOP_K = 8
MULTI_HOP_MAX_ENTITIES = 2
MULTI_HOP_MAX_PER_ENTITY = 5
LEXICAL_MAX_TERMS = 12  # longer queries keep their rarest-looking (longest) words

# hnsw returns at most ef_search rows per scan; with iterative scan it keeps walking the graph until the
# LIMIT is met after the scope filter, up to max_scan_tuples. relaxed_order lets it return slightly out of
# order; the outer ORDER BY on the exact distance restores it.
HNSW_EF_SEARCH = 100
HNSW_MAX_SCAN_TUPLES = 20000

# The lexical leg ORs the query's words minus facts.text.STOP_WORDS: websearch_to_tsquery alone ANDs them,
# and a natural four-word question then matches nothing at all.
_WORD_RE = re.compile(r"\w+", re.UNICODE)


def lexical_terms(query: str) -> list[str]:
    """The query's meaningful words, lower-cased, without stop words, deduplicated, in query order."""
    seen: dict[str, None] = {}
    for word in _WORD_RE.findall(query.lower()):
        if len(word) > 1 and word not in STOP_WORDS:
            seen.setdefault(word, None)
    terms = list(seen)
    if len(terms) > LEXICAL_MAX_TERMS:
        keep = set(sorted(terms, key=len, reverse=True)[:LEXICAL_MAX_TERMS])
        terms = [t for t in terms if t in keep]
    return terms


def or_query(terms: list[str]) -> str:
    """websearch_to_tsquery text that ORs the terms (its own parser keeps arbitrary input safe)."""
    return " or ".join(terms)


# A word found in more than this share of all facts ranks almost nothing (its IDF is near zero) yet makes
# the lexical leg fetch and rank every row holding it: "travels" alone matched 28% of a 30k-fact table and
# turned the leg into a 50 ms sequential scan. Such words leave the OR; if every word is that common, the
# leg asks for all of them together instead (a selective AND).
LEXICAL_MAX_TERM_FREQUENCY = 0.02
TERM_STATS_TTL_SECONDS = 300.0

# The planner's own statistics: ANALYZE (autovacuum runs it) samples search_vector and keeps its most
# common lexemes with the share of rows holding each. Read at most every TERM_STATS_TTL_SECONDS per process.
TERM_FREQUENCIES_SQL = """
SELECT most_common_elems::text::text[], most_common_elem_freqs
  FROM pg_stats
 WHERE schemaname = current_schema() AND tablename = 'facts_fact' AND attname = 'search_vector'
"""
_term_stats: dict = {"at": -1e9, "freq": {}}


def term_frequencies() -> dict[str, float]:
    now = time.monotonic()
    if now - _term_stats["at"] > TERM_STATS_TTL_SECONDS:
        with connection.cursor() as cursor:
            cursor.execute(TERM_FREQUENCIES_SQL)
            row = cursor.fetchone()
        freq = {}
        if row and row[0]:
            freq = dict(zip(row[0], row[1]))  # the freqs array has 3 trailing summary values: zip drops them
        _term_stats.update(at=now, freq=freq)
    return _term_stats["freq"]


def lexical_query(query: str) -> str:
    """The lexical leg's websearch_to_tsquery text for a user query: its rare meaningful words ORed."""
    terms = lexical_terms(query)
    if not terms:
        return ""
    freq = term_frequencies()
    rare = [t for t in terms if freq.get(t, 0.0) <= LEXICAL_MAX_TERM_FREQUENCY]
    return or_query(rare) if rare else " ".join(terms)


@dataclass
class Candidate:
    id: object
    text: str
    category: str
    kind: str
    metadata: dict
    valid_from: datetime | None
    recorded_from: datetime
    similarity: float | None
    distance: float | None
    text_rank: float
    recency: float
    in_open_conflict: bool = False
    expired: bool = False
    score: float = 0.0


@dataclass
class EpisodeCandidate:
    id: object
    text: str
    occurred_at: datetime
    metadata: dict
    similarity: float | None
    distance: float | None
    text_rank: float
    recency: float
    score: float = 0.0


_TUNED_CONNECTIONS: "weakref.WeakSet" = weakref.WeakSet()


def _settings_for_hnsw(cursor) -> None:
    """Once per database connection: session-level settings (SET LOCAL would need a transaction around
    a read-only query), so the hot path does not pay a round trip for them on every call."""
    raw = connection.connection
    if raw in _TUNED_CONNECTIONS:
        return
    cursor.execute(
        "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', false),"
        " set_config('hnsw.ef_search', %(ef)s, false), set_config('hnsw.max_scan_tuples', %(max)s, false)",
        {"ef": str(HNSW_EF_SEARCH), "max": str(HNSW_MAX_SCAN_TUPLES)},
    )
    _TUNED_CONNECTIONS.add(raw)


_FACT_COLUMNS = """
       f.id, f.text, f.category, f.kind, f.metadata, f.valid_from, f.recorded_from, f.volatility,
       f.last_confirmed_at"""

_BLOCK_FLAGS = """
       EXISTS (SELECT 1 FROM facts_conflictmember m JOIN facts_conflictset s ON s.id = m.conflict_set_id
                WHERE m.fact_id = f.id AND s.status = 'open') AS in_open_conflict,
       (f.volatility = 'stable' AND f.last_confirmed_at < %(stable_cutoff)s)
         OR (f.volatility = 'volatile' AND f.last_confirmed_at < %(volatile_cutoff)s) AS expired"""

_RECENCY = "exp(-greatest(extract(epoch FROM (%(now)s - coalesce(f.valid_from, f.recorded_from))), 0) / %(tau_seconds)s)"

_HARD_FILTERS = """f.project_id = %(project_id)s AND f.subject_id = %(subject_id)s AND f.status = 'active'
                   AND (f.valid_to IS NULL OR f.valid_to > %(now)s)"""

# Top-K by full-text rank over the query's rare words ("" matches nothing: the degraded path then falls back
# to recency). -- uses: facts_fact_search_gin
_LEXICAL_LEG = f"""    SELECT f.id FROM facts_fact f
     WHERE {_HARD_FILTERS} AND %(tsq)s <> '' AND f.search_vector @@ websearch_to_tsquery('simple', %(tsq)s)
     ORDER BY ts_rank_cd(f.search_vector, websearch_to_tsquery('simple', %(tsq)s), 32) DESC, f.recorded_from DESC
     LIMIT %(top_k)s"""

# Phase 2's columns besides similarity, on the union of the legs (the CTE `pool`).
_SCORED_POOL = f"""       CASE WHEN %(tsq)s = '' THEN 0
            ELSE ts_rank_cd(f.search_vector, websearch_to_tsquery('simple', %(tsq)s), 32) END AS text_rank,
       {_RECENCY} AS recency,
       {_BLOCK_FLAGS}
  FROM pool JOIN facts_fact f ON f.id = pool.id
 LIMIT %(candidate_limit)s"""

# Phase 1 + phase 2 in one round trip.
# -- uses: facts_fact_embedding_hnsw (dense leg, large scopes) or facts_fact_scope_status (dense leg, small
#          scopes: an exact sort of the scope is cheaper than walking the graph for a few matches)
# -- uses: facts_fact_search_gin (lexical leg)
HYBRID_CANDIDATES_SQL = f"""
WITH dense AS (
    SELECT f.id FROM facts_fact f
     WHERE {_HARD_FILTERS}
     ORDER BY f.embedding <=> %(qvec)s::halfvec
     LIMIT %(top_k)s
), lexical AS (
{_LEXICAL_LEG}
), pool AS (
    SELECT id FROM dense UNION SELECT id FROM lexical
)
SELECT {_FACT_COLUMNS},
       1 - (f.embedding <=> %(qvec)s::halfvec) AS similarity,
       f.embedding <=> %(qvec)s::halfvec AS distance,
{_SCORED_POOL}
"""

# Degraded path: no usable query vector. Lexical leg only, or the most recent facts when no word matches.
# -- uses: facts_fact_search_gin, then facts_fact_scope_recorded for the recency fallback
LEXICAL_CANDIDATES_SQL = f"""
WITH lexical AS (
{_LEXICAL_LEG}
), recent AS (
    SELECT f.id FROM facts_fact f
     WHERE {_HARD_FILTERS} AND NOT EXISTS (SELECT 1 FROM lexical)
     ORDER BY f.recorded_from DESC
     LIMIT %(top_k)s
), pool AS (
    SELECT id FROM lexical UNION ALL SELECT id FROM recent
)
SELECT {_FACT_COLUMNS},
       NULL::float8 AS similarity, NULL::float8 AS distance,
{_SCORED_POOL}
"""

# Multi-hop: facts naming one of the entities found in the facts already served. Full text only (no new
# embedding), one hop, at most MULTI_HOP_MAX_PER_ENTITY per entity, the newest first; blocked facts never come
# back here. Newest first rather than by ts_rank_cd: a single-lexeme query ranks every match nearly alike,
# and ranking them all cost 25 ms (p95 117 ms) in a 100k-fact scope where a name appears in thousands of
# facts; in recency order the scan stops at the fifth match.
# -- uses: facts_fact_scope_recorded (walks the scope newest first) or facts_fact_search_gin (rare names)
MULTI_HOP_SQL = f"""
SELECT e.entity, {_FACT_COLUMNS},
       {_RECENCY} AS recency
  FROM unnest(%(entities)s::text[]) AS e(entity)
 CROSS JOIN LATERAL (
       SELECT f.* FROM facts_fact f
        WHERE {_HARD_FILTERS}
          AND f.search_vector @@ to_tsquery('simple', quote_literal(lower(e.entity)))
          AND NOT (f.id = ANY(%(exclude)s::uuid[]))
          AND NOT EXISTS (SELECT 1 FROM facts_conflictmember m JOIN facts_conflictset s ON s.id = m.conflict_set_id
                           WHERE m.fact_id = f.id AND s.status = 'open')
          AND NOT ((f.volatility = 'stable' AND f.last_confirmed_at < %(stable_cutoff)s)
                   OR (f.volatility = 'volatile' AND f.last_confirmed_at < %(volatile_cutoff)s))
        ORDER BY f.recorded_from DESC, f.id DESC
        LIMIT %(per_entity)s) f
"""

_EVENT_SCORE_COLUMNS = """
       e.id, e.text, e.occurred_at, e.metadata,
       exp(-greatest(extract(epoch FROM (%(now)s - e.occurred_at)), 0) / %(tau_seconds)s) AS recency"""

# -- uses: facts_event_embedding_hnsw (large scopes) or facts_event_scope_time (small scopes)
EPISODES_DENSE_SQL = f"""
SELECT {_EVENT_SCORE_COLUMNS},
       1 - (e.embedding <=> %(qvec)s::halfvec) AS similarity,
       e.embedding <=> %(qvec)s::halfvec AS distance,
       CASE WHEN %(tsq)s = '' THEN 0
            ELSE ts_rank_cd(e.search_vector, websearch_to_tsquery('simple', %(tsq)s), 32) END AS text_rank
  FROM facts_event e
 WHERE e.project_id = %(project_id)s AND e.subject_id = %(subject_id)s
 ORDER BY e.embedding <=> %(qvec)s::halfvec
 LIMIT %(episode_k)s
"""

# Degraded path for episodes: full-text matches first, then the most recent.
# -- uses: facts_event_search_gin, facts_event_scope_time
EPISODES_LEXICAL_SQL = f"""
SELECT {_EVENT_SCORE_COLUMNS},
       NULL::float8 AS similarity, NULL::float8 AS distance,
       CASE WHEN %(tsq)s = '' THEN 0
            ELSE ts_rank_cd(e.search_vector, websearch_to_tsquery('simple', %(tsq)s), 32) END AS text_rank
  FROM facts_event e
 WHERE e.project_id = %(project_id)s AND e.subject_id = %(subject_id)s
 ORDER BY (%(tsq)s <> '' AND e.search_vector @@ websearch_to_tsquery('simple', %(tsq)s)) DESC, e.occurred_at DESC
 LIMIT %(episode_k)s
"""


def _rows(cursor) -> list[dict]:
    names = [c.name for c in cursor.description]
    rows = [dict(zip(names, row)) for row in cursor.fetchall()]
    for row in rows:
        # Django's psycopg setup leaves jsonb undecoded (its JSONField decodes); raw SQL decodes here.
        if isinstance(row.get("metadata"), str):
            row["metadata"] = json.loads(row["metadata"])
    return rows


def _base_params(*, project_id, subject_id, tsq, now, tau_seconds, cutoffs) -> dict:
    return {
        "project_id": project_id,
        "subject_id": subject_id,
        "tsq": tsq,
        "now": now,
        "tau_seconds": tau_seconds,
        "stable_cutoff": cutoffs["stable"],
        "volatile_cutoff": cutoffs["volatile"],
        "top_k": RETRIEVAL_TOP_K,
        "candidate_limit": CANDIDATE_LIMIT,
        "episode_k": EPISODE_TOP_K,
    }


def _candidate(r: dict) -> Candidate:
    """A fact row as a Candidate; the multi-hop query selects no similarity, text rank or block flags (its
    facts are found by a shared name, and blocked facts are filtered out in its SQL)."""
    return Candidate(
        id=r["id"], text=r["text"], category=r["category"], kind=r["kind"], metadata=r["metadata"],
        valid_from=r["valid_from"], recorded_from=r["recorded_from"], similarity=r.get("similarity"),
        distance=r.get("distance"), text_rank=float(r.get("text_rank") or 0.0), recency=float(r["recency"]),
        in_open_conflict=bool(r.get("in_open_conflict")), expired=bool(r.get("expired")),
    )


def fact_candidates(*, qvec, **base) -> list[Candidate]:
    params = _base_params(**base)
    with connection.cursor() as cursor:
        if qvec is not None:
            _settings_for_hnsw(cursor)
            cursor.execute(HYBRID_CANDIDATES_SQL, {**params, "qvec": vector_literal(qvec)})
        else:
            cursor.execute(LEXICAL_CANDIDATES_SQL, params)
        rows = _rows(cursor)
    return [_candidate(r) for r in rows]


def multi_hop_candidates(*, entities: list[str], exclude_ids: list, **base) -> list[tuple[str, Candidate]]:
    if not entities:
        return []
    params = {
        **_base_params(**base),
        "entities": entities,
        "exclude": [str(i) for i in exclude_ids],
        "per_entity": MULTI_HOP_MAX_PER_ENTITY,
    }
    with connection.cursor() as cursor:
        cursor.execute(MULTI_HOP_SQL, params)
        rows = _rows(cursor)
    return [(r["entity"], _candidate(r)) for r in rows]


def episode_candidates(*, qvec, **base) -> list[EpisodeCandidate]:
    params = _base_params(**base)
    with connection.cursor() as cursor:
        if qvec is not None:
            cursor.execute(EPISODES_DENSE_SQL, {**params, "qvec": vector_literal(qvec)})
        else:
            cursor.execute(EPISODES_LEXICAL_SQL, params)
        rows = _rows(cursor)
    return [
        EpisodeCandidate(
            id=r["id"], text=r["text"], occurred_at=r["occurred_at"], metadata=r["metadata"],
            similarity=r["similarity"], distance=r["distance"], text_rank=float(r["text_rank"] or 0.0),
            recency=float(r["recency"]),
        )
        for r in rows
    ]
