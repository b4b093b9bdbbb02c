"""The reads of multi-hop: the facts that share a name with the facts a call served, by full text, one hop
(context/packing.py packs them; context/retrieval_sql.py holds their statements)."""

from __future__ import annotations

from dataclasses import replace

from context.candidates import Candidate, fact_candidate
from context.retrieval import Lookup, TextQuery, scope_words_read
from context.retrieval_sql import FACTS, multi_hop_sql, multi_hop_within_sql
from hakimem.db import dict_rows
from hakimem.db_router import read_connection

MULTI_HOP_MAX_ENTITIES = 2
MULTI_HOP_MAX_PER_ENTITY = 5


def _walked(lookup: Lookup, entities: list[str]) -> set[int]:
    """The entities common enough in the scope, by its own word counts, to walk the scope for (_NAME_MATCH_WALKED)."""
    counted = lookup.scope_words.get(FACTS)
    if counted is None:
        return set()
    names = [entity.lower() for entity in entities]
    unread = [n for n in names if n not in counted.counts]
    if unread:  # names found in the served facts, not in the query: one more read, in a large scope only
        more = scope_words_read(lookup.project_id, lookup.subject_id, unread, tables=(FACTS,)).get(FACTS)
        if more is not None:
            counted = replace(counted, counts={**counted.counts, **more.counts})
    return {
        i for i, name in enumerate(names) if counted.holding(name, 0.0) ** 2 > MULTI_HOP_MAX_PER_ENTITY * counted.items
    }


def multi_hop_within(
    lookup: Lookup, *, entities: list[str], scope_facts: list[Candidate], exclude_ids: list
) -> list[tuple[str, Candidate]]:
    """multi_hop_candidates' answer, in a scope whose every active fact is in `scope_facts` (multi_hop_within_sql)."""
    excluded = set(exclude_ids)
    eligible = [c for c in scope_facts if c.id not in excluded and not c.in_open_conflict and not c.expired]
    if not entities or not eligible:
        return []
    params = {
        **lookup.params(TextQuery()),
        **{f"entity_{i}": entity for i, entity in enumerate(entities)},
        "ids": [str(c.id) for c in eligible],
    }
    with read_connection().cursor() as cursor:
        cursor.execute(multi_hop_within_sql(len(entities)), params)
        names = {row[0]: row[1:] for row in cursor.fetchall()}
    newest_first = sorted(
        sorted((c for c in eligible if c.id in names), key=lambda c: (c.text, str(c.id))),
        key=lambda c: c.recorded_from,
        reverse=True,
    )  # as the statement's ORDER BY
    found = []
    for i, entity in enumerate(entities):
        named = [c for c in newest_first if names[c.id][i]]
        found += [(entity, c) for c in named[:MULTI_HOP_MAX_PER_ENTITY]]
    return found


def multi_hop_candidates(lookup: Lookup, *, entities: list[str], exclude_ids: list) -> list[tuple[str, Candidate]]:
    if not entities:
        return []
    params = {
        **lookup.params(TextQuery()),
        **{f"entity_{i}": entity for i, entity in enumerate(entities)},
        "exclude": [str(i) for i in exclude_ids],
        "per_entity": MULTI_HOP_MAX_PER_ENTITY,
    }
    with read_connection().cursor() as cursor:
        cursor.execute(multi_hop_sql(len(entities), _walked(lookup, entities)), params)
        rows = dict_rows(cursor, json_columns=["metadata"])
    return [(r["entity"], fact_candidate(r)) for r in rows]
