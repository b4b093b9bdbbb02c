"""The memory as it stood at a past context call's time: the SQL of `as_of: "original"` replays (context/replay.py).

Not a hot path, and kept apart from context/retrieval.py for that reason: these statements run only when someone
replays a call. They reuse the hot path's building blocks (the same two phases, the same score parts, the same
ordering and limits: retrieval_sql.hybrid_sql with exact=True) with other hard filters:

- a fact counts if it was recorded and not yet superseded or retracted at T, and still valid at T:
  recorded_from <= T < coalesce(recorded_to, infinity) AND (valid_to IS NULL OR valid_to > T);
- an event counts if it was recorded by T (recorded_at <= T);
- a fact was in an open conflict at T if a set of its scope was open then (opened_at <= T and not resolved by T)
  and the fact had joined it by T (added_at <= T);
- volatility expiry cannot be rebuilt (last_confirmed_at is overwritten by each repeat write): a fact the original
  call decided keeps that call's verdict (`expired_ids` / `fresh_ids`, from its decisions); any other fact is
  judged from today's last_confirmed_at against T's cutoffs.

Invariant 1 of context/retrieval_sql.py holds (the exact scope filters every query). The hot path's hnsw, GIN and
covering indexes are partial on status = 'active' and cannot serve rows superseded since, so every statement here
sorts the scope exactly (a scan of the scope's rows through facts_fact_scope_status / facts_event_scope_time):
a replay pays for the scope's size where a plain call does not. That is acceptable for an instrument run by hand
or by `manage.py replay`, and it is what a call on a small scope did anyway (TableStats.dense_exact).
"""

from __future__ import annotations

from django.db import connection

from context import retrieval
from context.candidates import Candidate, EpisodeCandidate, episode_candidate, fact_candidate
from context.multi_hop import MULTI_HOP_MAX_PER_ENTITY
from context.retrieval import Lookup
from context.retrieval_sql import (
    EVENTS,
    EVENTS_SOURCE,
    FACT_COLUMNS,
    FACTS,
    RECENCY,
    Source,
    distance_sql,
    hybrid_sql,
    multi_hop_branch,
    next_turns_sql,
    scope_state_sql,
    text_rank_sql,
)
from hakimem.db import dict_rows
from hakimem.embeddings import vector_literal

_FACTS_AT = """f.project_id = %(project_id)s AND f.subject_id = %(subject_id)s
                   AND f.recorded_from <= %(now)s AND (f.recorded_to IS NULL OR f.recorded_to > %(now)s)
                   AND (f.valid_to IS NULL OR f.valid_to > %(now)s)"""

_IN_OPEN_CONFLICT_AT = """EXISTS (SELECT 1 FROM facts_conflictmember m JOIN facts_conflictset s ON s.id = m.conflict_set_id
                WHERE m.fact_id = f.id AND m.project_id = %(project_id)s AND s.project_id = %(project_id)s
                  AND s.subject_id = f.subject_id
                  AND s.opened_at <= %(now)s AND (s.resolved_at IS NULL OR s.resolved_at > %(now)s)
                  AND m.added_at <= %(now)s)"""

_EXPIRED_AT = """(CASE WHEN f.id = ANY(%(expired_ids)s::uuid[]) THEN true
               WHEN f.id = ANY(%(fresh_ids)s::uuid[]) THEN false
               ELSE coalesce((f.volatility = 'stable' AND f.last_confirmed_at < %(stable_cutoff)s)
                          OR (f.volatility = 'volatile' AND f.last_confirmed_at < %(volatile_cutoff)s), false) END)"""

_FACTS_SRC = Source(
    table=FACTS,
    a="f",
    filters=_FACTS_AT,
    recency=RECENCY,
    row=f"""{FACT_COLUMNS},
       {distance_sql("f")} AS distance,
       {text_rank_sql("f")} AS text_rank,
       {RECENCY} AS recency,
       {_IN_OPEN_CONFLICT_AT} AS in_open_conflict,
       {_EXPIRED_AT} AS expired""",
)
_EVENTS_SRC = Source(
    table=EVENTS,
    a="e",
    filters="e.project_id = %(project_id)s AND e.subject_id = %(subject_id)s AND e.recorded_at <= %(now)s",
    recency=EVENTS_SOURCE.recency,
    row=EVENTS_SOURCE.row,
)

# -- uses: facts_fact_scope_status (an exact scan of the scope: the partial indexes cannot serve the past)
FACTS_AS_OF_SQL = hybrid_sql(_FACTS_SRC, exact=True)
# -- uses: facts_event_scope_time (an exact scan of the scope)
EVENTS_AS_OF_SQL = hybrid_sql(_EVENTS_SRC, exact=True)

# -- uses: facts_event_pkey, facts_event_scope_time (as NEXT_TURNS_SQL; the event recorded by T filtered on the way)
NEXT_TURNS_AS_OF_SQL = next_turns_sql(_EVENTS_SRC.filters)

_MULTI_HOP_BRANCH_AT = multi_hop_branch(_FACTS_AT, _IN_OPEN_CONFLICT_AT, _EXPIRED_AT)

# An empty replay's scope as it stood at T (retrieval_sql.scope_state_sql): its facts and events by their recorded
# times, its procedures and identity blocks by their creation (a block deleted since is not known).
SCOPE_STATE_AS_OF_SQL = scope_state_sql(_FACTS_AT, as_of=True)


def _params(lookup: Lookup, text, verdicts: dict) -> dict:
    return {
        **lookup.params(text),
        "expired_ids": [str(i) for i in verdicts.get("expired", ())],
        "fresh_ids": [str(i) for i in verdicts.get("fresh", ())],
    }


def fact_candidates_as_of(lookup: Lookup, *, qvec, verdicts: dict) -> list[Candidate]:
    with connection.cursor() as cursor:
        cursor.execute(FACTS_AS_OF_SQL, {**_params(lookup, lookup.fact_text, verdicts), "qvec": vector_literal(qvec)})
        rows = dict_rows(cursor, json_columns=["metadata"])
    return [fact_candidate(r) for r in rows]


def episode_candidates_as_of(lookup: Lookup, *, qvec) -> list[EpisodeCandidate]:
    with connection.cursor() as cursor:
        cursor.execute(EVENTS_AS_OF_SQL, {**lookup.params(lookup.event_text), "qvec": vector_literal(qvec)})
        rows = dict_rows(cursor, json_columns=["metadata"])
    return [episode_candidate(r) for r in rows]


def next_turns_as_of(lookup: Lookup, question_ids: list) -> dict:
    return retrieval.next_turns(lookup, question_ids, NEXT_TURNS_AS_OF_SQL, connection)


def scope_state_as_of(lookup: Lookup) -> retrieval.ScopeState:
    return retrieval.scope_state(lookup, SCOPE_STATE_AS_OF_SQL)


def multi_hop_candidates_as_of(lookup: Lookup, *, entities: list[str], exclude_ids: list, verdicts: dict):
    if not entities:
        return []
    params = {
        **_params(lookup, retrieval.TextQuery(), verdicts),
        **{f"entity_{i}": entity for i, entity in enumerate(entities)},
        "exclude": [str(i) for i in exclude_ids],
        "per_entity": MULTI_HOP_MAX_PER_ENTITY,
    }
    sql = "\nUNION ALL".join(_MULTI_HOP_BRANCH_AT.replace("{n}", str(i)) for i in range(len(entities)))
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = dict_rows(cursor, json_columns=["metadata"])
    return [(r["entity"], fact_candidate(r)) for r in rows]
