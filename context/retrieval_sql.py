"""The retrieval SQL of POST /v1/context: every statement the assembler runs against the memory store, as text
built once at import; context/retrieval.py runs them (context/retrieval_asof.py, the same as the store was).

Invariants (each statement below keeps all of them; tests/context/test_retrieval_plans.py checks the plans):
1. Scope first: every query filters the exact scope `project_id = %(project_id)s AND subject_id = %(subject_id)s`;
   procedures, which may be written for the whole project, the subject's and the project-wide ones:
   `subject_id IN (%(subject_id)s, '')`, never another subject's. Every other table a query reads (conflict sets
   and members, a leg's rows fetched again by id) it filters on the project too: each statement then names its
   project for every table, what a database distributed by project needs to run it on one shard
   (docs/scaling.md; tests/context/test_statements_filter_on_project.py).
2. Hard filters before any score: `status = 'active'` and `valid_to IS NULL OR valid_to > %(now)s` sit in the
   WHERE clause of each fact leg, so a retracted, superseded or no-longer-valid fact is never scored (events
   have no status or validity: the scope is their only filter; procedures have a status and no validity).
   Facts blocked by an open conflict set or by expired volatility are *not* filtered here: they are
   returned flagged (`in_open_conflict`, `expired`) so the trace can say why they were not served.
3. Each phase-1 leg takes its top K first, and only those rows are scored (at most DENSE_TOP_K +
   LEXICAL_TOP_K in all); the statement returns the CANDIDATE_LIMIT best by hybrid score, with only what
   packing needs: never the embedding. Facts, events and procedures take the same path (_legs), one statement
   each (hybrid_sql), or facts and events in one statement for a plain call (_together_sql: each table's legs
   as above, the CANDIDATE_LIMIT best of both returned). A scope of at most DENSE_TOP_K rows a table is the whole
   of its legs' pool: a call then scores it whole (WHOLE_SCOPE_SQL, at most DENSE_TOP_K + 1 rows a table), a plain
   call always, a tiered or boosted one when it holds no more than the candidate limit.
4. Parameters go through the driver; nothing is formatted into SQL text. Only WHOLE_SCOPE_SQL runs as a server-side
   prepared statement (hakimem/postgresql/base.py), its plan the same whatever the scope: the others' generic plans
   would lose the hnsw index (hakimem/dbserver.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from hakimem.db import decay_sql

# The tables a context call ranks; each has its own statistics, graph and covering index.
FACTS, EVENTS, PROCEDURES = "facts_fact", "facts_event", "facts_procedure"

# The planner's own statistics, refreshed by autovacuum's ANALYZE: the table's row estimate, its most common
# lexemes (share of rows holding each) and its most common subjects (share of rows of each). pg_stats hides
# them from the row-security roles a request runs as: hakimem_table_stats (facts/migrations/0008, 0010) reads them
# as the tables' owner.
TABLE_STATS_SQL = """
SELECT * FROM hakimem_table_stats(%(table)s::regclass, %(scope_graphs)s)
"""

# What the statistics are at: per ranked table, its row estimate, how many times it was analysed, and its count of
# indexes (a scope graph is one). ANALYZE, VACUUM and a graph's creation change one of these whenever they change what
# hakimem_table_stats reads, so a process keeps its copy of the statistics exactly as long as this says they are the
# same: every worker then weighs a call's words alike, at the cost of this one catalogue read a call. ANALYZE counts
# itself before its transaction commits, so statistics read within retrieval.STATS_SETTLE_SECONDS of an ANALYZE may
# predate it: they are read once more when that time has passed, and workers may disagree for that long, never longer.
# (Not in the version: a project's first row of a subject the table already counts among its most common, which names
# that subject in the project's statistics, a size estimate that picks a plan, from the next version on.) The counts
# come from the cumulative statistics, which a transaction keeps a copy of once read: the copy is dropped first (a
# long transaction, a test's, would see the counts of its start).
# -- uses: pg_class_oid_index, pg_index_indrelid_index
TABLE_STATS_VERSION_SQL = """
SELECT c.relname, c.reltuples,
       pg_stat_get_analyze_count(c.oid) + pg_stat_get_autoanalyze_count(c.oid),
       coalesce(greatest(pg_stat_get_last_analyze_time(c.oid), pg_stat_get_last_autoanalyze_time(c.oid))
                > statement_timestamp() - make_interval(secs => %(settle)s), false),
       (SELECT count(*) FROM pg_index x WHERE x.indrelid = c.oid)
  FROM (SELECT pg_stat_clear_snapshot()) fresh, pg_class c
 WHERE c.oid = ANY(%(tables)s::regclass[])"""

# The same two on a Citus coordinator (hakimem.citus.on_citus), where the tables' own catalogue rows are empty shells:
# hakimem/citus.py's functions read the shards' (those of the caller's projects) on the workers and add them up.
CITUS_TABLE_STATS_SQL = """
SELECT * FROM hakimem_shard_table_stats(%(table)s::regclass, %(scope_graphs)s)
"""
CITUS_TABLE_STATS_VERSION_SQL = """
SELECT * FROM hakimem_shard_stats_version(%(tables)s::regclass[], %(settle)s)"""

# A large scope's own word counts (facts.models.ScopeWordCounts, kept by the nightly consolidation): for the words a
# call asks about, how many of the scope's items hold each. One round trip, made only where the planner's statistics
# expect the scope to hold at least half of settings.HAKI_SCOPE_WORDS_MIN_ITEMS facts or events (retrieval.lookup_for):
# a small scope's call never pays it. A scope without counts has its words judged by their share of the table.
# -- uses: facts_scopewordcounts_pkey
SCOPE_WORDS_SQL = """
SELECT c.items_table, c.items, c.unlisted_max, w.word, w.items
  FROM facts_scopewordcounts c
  LEFT JOIN facts_scopeword w ON w.project_id = c.project_id AND w.subject_id = c.subject_id
                             AND w.items_table = c.items_table AND w.word = ANY(%(words)s)
 WHERE c.project_id = %(project_id)s AND c.subject_id = %(subject_id)s AND c.items_table = ANY(%(tables)s)"""


FACT_COLUMNS = """
       f.id, f.text, f.category, f.kind, f.importance, f.metadata, f.valid_from, f.recorded_from"""

# Why a fact `f` is blocked: the ranked queries return both as flags, multi-hop filters them out.
# The scope columns are redundant (a set holds facts of one scope) but bound every plan to the scope: with
# `status = 'open'` alone, a planner that trusts small statistics walks every open set of every project
# through facts_conflict_scope_status, once per candidate (tests/context/test_cross_tenant_plans.py). The project
# is the call's parameter rather than f's column: `f` is often a leg's subquery, which names no table.
_IN_OPEN_CONFLICT = """EXISTS (SELECT 1 FROM facts_conflictmember m JOIN facts_conflictset s ON s.id = m.conflict_set_id
                WHERE m.fact_id = f.id AND m.project_id = %(project_id)s AND s.project_id = %(project_id)s
                  AND s.subject_id = f.subject_id AND s.status = 'open')"""
_EXPIRED = """((f.volatility = 'stable' AND f.last_confirmed_at < %(stable_cutoff)s)
         OR (f.volatility = 'volatile' AND f.last_confirmed_at < %(volatile_cutoff)s))"""

_BLOCK_FLAGS = f"""
       {_IN_OPEN_CONFLICT} AS in_open_conflict,
       {_EXPIRED} AS expired"""

# Recency decays in double precision (date_part: a numeric's exp() costs more a row for the same ranks). The exponent
# stops at hakimem.db.DECAY_MIN_EXPONENT, so that no old item nor tiny tau underflows exp() and fails the call
# (tests/context/test_recency_bounds.py).
RECENCY = decay_sql("%(now)s", "coalesce(f.valid_from, f.recorded_from)", "tau_seconds")
_EVENT_RECENCY = decay_sql("%(now)s", "e.occurred_at", "tau_seconds")
# A procedure is as fresh as its last edit: its steps are kept current in place.
_PROCEDURE_RECENCY = decay_sql("%(now)s", "x.updated_at", "tau_seconds")

HARD_FILTERS = """f.project_id = %(project_id)s AND f.subject_id = %(subject_id)s AND f.status = 'active'
                   AND (f.valid_to IS NULL OR f.valid_to > %(now)s)"""


# ts_rank_cd's normalisation 32 maps a rank r to r / (r + 1), bounded in [0, 1). It stands for the text rank where
# the lexical legs order their matches (cheap, no subquery per row); the score uses text_rank_sql below.
TS_RANK_NORMALISATION = 32


def lexical_order_sql(alias: str, tsq_param: str) -> str:
    return (
        f"ts_rank_cd({alias}.search_vector, websearch_to_tsquery('simple', %({tsq_param})s), {TS_RANK_NORMALISATION})"
    )


def text_rank_sql(alias: str) -> str:
    """The share of the query's information a row holds: the weights (TextQuery.weights, log inverse row
    share, summing to 1) of the query words it contains. In [0, 1] like the similarity, and a rare word counts
    for more than a common one. ts_rank_cd, the rank the specification names, ignores how rare a word is and stays near 0.1
    for a row matching one word of an ORed query, so that with W_TEXT 0.25 the words moved almost nothing
    (docs/quality.md, LoCoMo). The lexical leg orders its matches with ts_rank_cd in this rank's place (_legs):
    this rank costs a subquery per matching row. Each word's tsquery is parsed once per statement (an
    uncorrelated InitPlan), not once per row and word.

    A row counts only if it holds a word the lexical leg fetches (TextQuery.kept): a word too common in the scope
    to fetch then adds to the rank of the rows a rarer word found, and ranks nothing alone: counted alone it would
    fill the top of the ranking with rows that hold only it, which neither leg can reach (docs/performance.md,
    phase-1 recall). In a scope where the leg fetches every word the rule changes nothing."""
    return f"""CASE WHEN %(tsq)s = '' THEN 0
            ELSE (SELECT CASE WHEN bool_or(t.kept) THEN sum(t.weight) ELSE 0 END
                    FROM unnest((SELECT array_agg(to_tsquery('simple', quote_literal(w.term)) ORDER BY w.i)
                                   FROM unnest(%(terms)s::text[]) WITH ORDINALITY AS w(term, i)),
                                %(term_weights)s::float8[], %(term_kept)s::boolean[]) AS t(tq, weight, kept)
                   WHERE {alias}.search_vector @@ t.tq) END"""


def scoped_match(alias: str, tsquery: str) -> str:
    """`alias`'s row holds `tsquery` (a tsquery expression of the call's parameters), asked as the full-text indexes
    of facts and events can answer it best: its words ANDed with the lexeme of the call's scope, which every row's
    search_vector holds (facts.models.ScopeLexeme), so that GIN intersects the words' posting lists with the
    scope's. The whole right-hand side is folded into one constant when the statement is planned. A tsquery of no
    word matches nothing (NULL), as it did alone, rather than every row of the scope."""
    return (
        f"{alias}.search_vector @@ (CASE WHEN numnode({tsquery}) = 0 THEN NULL"
        f" ELSE {tsquery} && hakimem_scope_query(%(project_id)s, %(subject_id)s) END)"
    )


# The degraded path's only leg: top-K by full-text rank over the whole informative query ("" matches nothing
# and the path falls back to recency), of at most LEXICAL_LEG_MAX_ROWS matches, as the two-phase path's lexical leg.
# -- uses: facts_fact_search_gin
_LEXICAL_LEG = f"""    SELECT f.id FROM (SELECT f.id, f.text, f.search_vector, f.recorded_from FROM facts_fact f
                        WHERE {HARD_FILTERS} AND %(tsq)s <> ''
                          AND {scoped_match("f", "websearch_to_tsquery('simple', %(tsq)s)")}
                        LIMIT %(leg_max_rows)s) f
     ORDER BY {lexical_order_sql("f", "tsq")} DESC, f.recorded_from DESC, f.text COLLATE "C", f.id
     LIMIT %(top_k)s"""


# Phase 2's columns besides the distance, for a fact `f` of a leg.
_SCORED_POOL = f"""       {text_rank_sql("f")} AS text_rank,
       {RECENCY} AS recency,
       {_BLOCK_FLAGS}"""


def distance_sql(a: str) -> str:
    """The cosine distance of `a`'s row to the query. A stored vector of zeros (a text the embedder found nothing
    in, such as "!!!" for the hashing embedder) has no direction: pgvector answers NaN, which PostgreSQL sorts
    above every score (served first) and which the trace's JSON cannot hold (the call failed with a 500). It
    counts as unrelated: distance 1."""
    return f"COALESCE(NULLIF({a}.embedding <=> (SELECT v FROM q), 'NaN'::float8), 1.0)"


@dataclass(frozen=True)
class Source:
    """One table as the two-phase path sees it, under the alias `a`: which rows may be scored at all (the hard
    filters), what packing needs of a row, and the time its recency decays from."""

    table: str
    a: str
    filters: str
    row: str  # every column packing needs, the distance to `q` included; never the embedding
    recency: str  # the row's recency, in [0, 1]
    scoped_text: bool = True  # its full-text index holds the scope's lexeme (scoped_match); procedures' does not

    def text_match(self, tsquery: str) -> str:
        return scoped_match(self.a, tsquery) if self.scoped_text else f"{self.a}.search_vector @@ {tsquery}"


FACTS_SOURCE = Source(
    table=FACTS,
    a="f",
    filters=HARD_FILTERS,
    recency=RECENCY,
    row=f"""{FACT_COLUMNS},
       {distance_sql("f")} AS distance,
{_SCORED_POOL}""",
)
# Episodes have no status, validity or conflicts: the scope is their only hard filter.
EVENTS_SOURCE = Source(
    table=EVENTS,
    a="e",
    filters="e.project_id = %(project_id)s AND e.subject_id = %(subject_id)s",
    recency=_EVENT_RECENCY,
    row=f"""
       e.id, e.text, e.occurred_at, e.metadata,
       {distance_sql("e")} AS distance,
       {text_rank_sql("e")} AS text_rank,
       {_EVENT_RECENCY} AS recency""",
)

# Procedures: the subject's own and the project's (subject_id ''), active ones only: two scopes, so their
# full-text index is the plain one (a scope holds few procedures).
PROCEDURES_SOURCE = Source(
    table=PROCEDURES,
    a="x",
    recency=_PROCEDURE_RECENCY,
    scoped_text=False,
    filters="x.project_id = %(project_id)s AND x.subject_id IN (%(subject_id)s, '') AND x.status = 'active'",
    row=f"""
       x.id, x.title, x.text, x.category, x.importance, x.metadata, x.updated_at,
       {distance_sql("x")} AS distance,
       {text_rank_sql("x")} AS text_rank,
       {_PROCEDURE_RECENCY} AS recency""",
)

# The SQL twin of context.scoring.hybrid_score (weights passed from there), used only to keep the best
# CANDIDATE_LIMIT rows of the pool; the assembler scores them again in Python, and a test pins the two
# orders together. Ties break as the assembler's sort does (context.scoring.rank_order): more recent first, then by
# text, then by id.
_BY_HYBRID_SCORE = """
 ORDER BY %(w_similarity)s * (1 - distance) + %(w_text)s * text_rank + %(w_recency)s * recency DESC,
          recency DESC, text COLLATE "C", id
 LIMIT %(candidate_limit)s"""


def _legs(src: Source, *, exact: bool, name: str = "") -> str:
    """Phase 1 of `src`: the CTE `{name}pool`, the whole rows of its two legs, which phase 2 scores once (_scored).
    The dense leg `{name}dense` takes the DENSE_TOP_K nearest; the lexical leg the LEXICAL_TOP_K best matches of its
    words that the dense leg does not hold, so its rows are all new. It orders them by the hybrid score, ts_rank_cd
    standing for the text rank: a word in 800 facts of a scope matches each alike, and ordered by ts_rank_cd alone
    (ties newest first) the leg would keep 64 of them blind to the question's meaning. Reading each match's vector
    costs little beside reading its row. It reads at most LEXICAL_LEG_MAX_ROWS matches. A row a leg read is never
    fetched again by id, and only the legs' rows are scored, as one pool, so that the score's subqueries (the text
    rank, the open-conflict check) are planned once. The dense leg reads the query vector from the CTE `q`.

    exact=False: the dense leg walks the table's hnsw graph (iterative scan, filtered to the scope).
    exact=True, for scopes too small a share of the table for the graph (TableStats.dense_exact): the same
    distance through cosine_distance(), which no index serves, so the scope is sorted exactly, read from the
    table's covering index (index-only: one leaf page holds ~10 vectors where the heap holds ~1 row of the
    scope per page); the K nearest are then fetched by id."""
    a = src.a
    if exact:
        dense = f"""{name}nearest AS (
    SELECT {a}.id FROM {src.table} {a}
     WHERE {src.filters}
     ORDER BY cosine_distance({a}.embedding, (SELECT v FROM q))
     LIMIT %(dense_k)s
), {name}dense AS (
    SELECT {a}.* FROM {name}nearest JOIN {src.table} {a} ON {a}.id = {name}nearest.id AND {a}.project_id = %(project_id)s
)"""
    else:
        dense = f"""{name}dense AS (
    SELECT {a}.* FROM {src.table} {a}
     WHERE {src.filters}
     ORDER BY {a}.embedding <=> (SELECT v FROM q)
     LIMIT %(dense_k)s
)"""
    return f"""{dense}, {name}pool AS (
    SELECT * FROM {name}dense
     UNION ALL
    SELECT * FROM (SELECT {a}.* FROM (SELECT {a}.* FROM {src.table} {a}
                                      WHERE {src.filters} AND %(leg_tsq)s <> ''
                                        AND {src.text_match("websearch_to_tsquery('simple', %(leg_tsq)s)")}
                                        AND {a}.id NOT IN (SELECT id FROM {name}dense)
                                      LIMIT %(leg_max_rows)s) {a}
                    ORDER BY %(w_similarity)s * (1 - {distance_sql(a)}) + %(w_text)s * {lexical_order_sql(a, "leg_tsq")}
                             + %(w_recency)s * {src.recency} DESC, {a}.text COLLATE "C", {a}.id
                    LIMIT %(top_k)s) {name}lexical
)"""


def _scored(src: Source, name: str = "") -> str:
    """Phase 2's columns of every row of `{name}pool` (_legs): what packing needs and the parts of the score."""
    return f"SELECT {src.row} FROM {name}pool {src.a}"


# The query vector is sent once (CTE `q`: a literal repeated in each leg is parsed again each time) and reaches the
# hnsw scan as an InitPlan parameter.
_QUERY_VECTOR = "WITH q AS MATERIALIZED (SELECT %(qvec)s::halfvec AS v)"


def hybrid_sql(src: Source, *, exact: bool) -> str:
    """Phase 1 + phase 2 in one round trip, for facts, episodes or procedures (_legs, _scored)."""
    return f"""
{_QUERY_VECTOR}, {_legs(src, exact=exact)}
SELECT *, 1 - distance AS similarity FROM ({_scored(src)}) pool{_BY_HYBRID_SCORE}
"""


# A call's text query against the events table, beside the one against facts in the same statement
# (TOGETHER_SQL): its parameters under their own names.
EPISODE_TEXT_PREFIX = "episode_"
TEXT_PARAMS = ("tsq", "leg_tsq", "terms", "term_weights", "term_kept")


def _episode_text_params(sql: str) -> str:
    for name in TEXT_PARAMS:
        sql = sql.replace(f"%({name})s", f"%({EPISODE_TEXT_PREFIX}{name})s")
    return sql


# One row shape for both kinds of candidate: each kind's own columns, NULL for the other's.
_FACT_ROWS = f"""SELECT 'fact' AS item_type, id, text, category, kind, importance, metadata, valid_from, recorded_from,
           NULL::timestamptz AS occurred_at, distance, text_rank, recency, in_open_conflict, expired
      FROM ({_scored(FACTS_SOURCE, "f_")}) facts"""
_EPISODE_ROWS = f"""SELECT 'episode', id, text, NULL, NULL, NULL, metadata, NULL, NULL,
           occurred_at, distance, text_rank, recency, false, false
      FROM ({_scored(EVENTS_SOURCE, "e_")}) events"""


def _together_sql(*, facts_exact: bool, events_exact: bool) -> str:
    """A plain call's facts and episodes in one round trip: both tables' legs (_legs), each table's pool scored
    (_scored), then the CANDIDATE_LIMIT best of all their rows by hybrid score. A plain call ranks facts and
    episodes together by that same score (context.assembler.rank_candidates), so these are the call's candidates,
    in its order, where a statement per table would return up to twice as many. The events' text query has its own
    parameters (EPISODE_TEXT_PREFIX)."""
    return f"""
{_QUERY_VECTOR}, {_legs(FACTS_SOURCE, exact=facts_exact, name="f_")},
{_episode_text_params(_legs(EVENTS_SOURCE, exact=events_exact, name="e_"))}
SELECT *, 1 - distance AS similarity FROM ({_FACT_ROWS}
     UNION ALL {_episode_text_params(_EPISODE_ROWS)}) pool{_BY_HYBRID_SCORE}
"""


# -- uses: facts_fact_embedding_hnsw (dense leg), facts_fact_search_gin (lexical leg)
HYBRID_CANDIDATES_SQL = hybrid_sql(FACTS_SOURCE, exact=False)
# -- uses: facts_fact_scope_vectors (dense leg), facts_fact_search_gin (lexical leg)
HYBRID_EXACT_CANDIDATES_SQL = hybrid_sql(FACTS_SOURCE, exact=True)
# -- uses: facts_event_embedding_hnsw (dense leg), facts_event_search_gin (lexical leg)
EPISODES_HYBRID_SQL = hybrid_sql(EVENTS_SOURCE, exact=False)
# -- uses: facts_event_scope_vectors (dense leg), facts_event_search_gin (lexical leg)
EPISODES_HYBRID_EXACT_SQL = hybrid_sql(EVENTS_SOURCE, exact=True)
# -- uses: facts_procedure_embedding_hnsw (dense leg), facts_procedure_search_gin (lexical leg)
PROCEDURES_HYBRID_SQL = hybrid_sql(PROCEDURES_SOURCE, exact=False)
# -- uses: facts_procedure_scope_vectors (dense leg: the subject's range and the project's), facts_procedure_search_gin
PROCEDURES_HYBRID_EXACT_SQL = hybrid_sql(PROCEDURES_SOURCE, exact=True)
# A plain call's facts and episodes together, by (facts exact, events exact): the four combinations of the above.
# -- uses: what HYBRID_CANDIDATES_SQL / HYBRID_EXACT_CANDIDATES_SQL and EPISODES_HYBRID_SQL / EPISODES_HYBRID_EXACT_SQL use
TOGETHER_SQL = {(f, e): _together_sql(facts_exact=f, events_exact=e) for f in (False, True) for e in (False, True)}

# A scope of at most DENSE_TOP_K rows a table is wholly in its dense leg (sorted exactly, TableStats.dense_exact), and
# its lexical leg then reads nothing new: the pool is the whole scope, and the two phases are overhead (docs/tuning.md).
# WHOLE_SCOPE_SQL reads each table's scope whole, at most dense_k + 1 rows, scores every row as phase 2 does and
# returns the same candidates in the same order, with the rows read per table (scope_facts, scope_events): a count
# above dense_k means the scope outgrew the planner's statistics, and the call runs TOGETHER_SQL instead (a tiered or
# boosted call, one statement per table: retrieval.candidates_together, retrieval.whole_scope_candidates,
# retrieval.WHOLE_SCOPE_MAX_SHARE).
# -- uses: facts_fact_scope_recorded and facts_event_scope_vectors (the scope's rows, in no order)


def _whole_pool(src: Source, name: str) -> str:
    return f"""{name}pool AS (
    SELECT {src.a}.* FROM {src.table} {src.a} WHERE {src.filters} LIMIT %(dense_k)s + 1
)"""


WHOLE_SCOPE_SQL = f"""
{_QUERY_VECTOR}, {_whole_pool(FACTS_SOURCE, "f_")}, {_whole_pool(EVENTS_SOURCE, "e_")}
SELECT *, 1 - distance AS similarity,
       (SELECT count(*) FROM f_pool) AS scope_facts, (SELECT count(*) FROM e_pool) AS scope_events
  FROM ({_FACT_ROWS}
     UNION ALL {_episode_text_params(_EPISODE_ROWS)}) pool{_BY_HYBRID_SCORE}
"""


# Degraded path: no usable query vector. Lexical leg only, or the most recent facts when no word matches.
# -- uses: facts_fact_search_gin, then facts_fact_scope_recorded for the recency fallback
LEXICAL_CANDIDATES_SQL = f"""
WITH lexical AS (
{_LEXICAL_LEG}
), recent AS (
    SELECT f.id FROM facts_fact f
     WHERE {HARD_FILTERS} AND NOT EXISTS (SELECT 1 FROM lexical)
     ORDER BY f.recorded_from DESC, f.text COLLATE "C", f.id
     LIMIT %(top_k)s
), pool AS (
    SELECT id FROM lexical UNION ALL SELECT id FROM recent
)
SELECT {FACT_COLUMNS},
       NULL::float8 AS similarity, NULL::float8 AS distance,
{_SCORED_POOL}
  FROM pool JOIN facts_fact f ON f.id = pool.id AND f.project_id = %(project_id)s
 LIMIT %(candidate_limit)s
"""

# Degraded path for episodes: full-text matches first, then the most recent.
# -- uses: facts_event_scope_time
EPISODES_LEXICAL_SQL = f"""
SELECT e.id, e.text, e.occurred_at, e.metadata,
       {_EVENT_RECENCY} AS recency,
       NULL::float8 AS similarity, NULL::float8 AS distance,
       {text_rank_sql("e")} AS text_rank
  FROM facts_event e
 WHERE {EVENTS_SOURCE.filters}
 ORDER BY (%(tsq)s <> '' AND e.search_vector @@ websearch_to_tsquery('simple', %(tsq)s)) DESC, e.occurred_at DESC,
          e.text COLLATE "C", e.id
 LIMIT %(top_k)s
"""


# A served episode that ends in a question is followed by its answer: the scope's next event by occurred_at, ties by
# id (the index's order), at most one per question, for all of a call's packable questions in one statement
# (context/packing.py serves it beside its question). `filters` keeps the events the call may see: the scope, and
# for a replay as it was those recorded by then (context/retrieval_asof.py).
# -- uses: facts_event_pkey (the questions), facts_event_scope_time (each next event: the first row past its question)
def next_turns_sql(filters: str) -> str:
    return f"""
SELECT n.after_id, e.id, e.text, e.occurred_at, e.metadata, {_EVENT_RECENCY} AS recency,
       NULL::float8 AS similarity, NULL::float8 AS distance, 0.0::float8 AS text_rank
  FROM facts_event q
 CROSS JOIN LATERAL (
    SELECT q.id AS after_id, e.id FROM facts_event e
     WHERE {filters} AND (e.occurred_at, e.id) > (q.occurred_at, q.id)
     ORDER BY e.occurred_at, e.id
     LIMIT 1) n
  JOIN facts_event e ON e.id = n.id AND e.project_id = %(project_id)s
 WHERE q.project_id = %(project_id)s AND q.subject_id = %(subject_id)s AND q.id = ANY(%(ids)s::uuid[])"""


NEXT_TURNS_SQL = next_turns_sql(EVENTS_SOURCE.filters)


# Degraded path for procedures: full-text matches first, then the most recently edited. A scope holds few
# procedures: its rows are read from the scope index and sorted.
# -- uses: facts_procedure_scope_vectors (the scope's active rows)
PROCEDURES_LEXICAL_SQL = f"""
SELECT x.id, x.title, x.text, x.category, x.importance, x.metadata, x.updated_at,
       {_PROCEDURE_RECENCY} AS recency,
       NULL::float8 AS similarity, NULL::float8 AS distance,
       {text_rank_sql("x")} AS text_rank
  FROM facts_procedure x
 WHERE {PROCEDURES_SOURCE.filters}
 ORDER BY (%(tsq)s <> '' AND x.search_vector @@ websearch_to_tsquery('simple', %(tsq)s)) DESC, x.updated_at DESC,
          x.text COLLATE "C", x.id
 LIMIT %(top_k)s
"""

# Multi-hop: facts naming one of the entities found in the facts already served. Full text only (no new
# embedding), one hop, at most MULTI_HOP_MAX_PER_ENTITY per entity, the newest first (a single-lexeme query ranks every
# match nearly alike; ties by text, then id: what an export and import keep, so that a copy hops alike); blocked facts never come back here. One branch per entity, each planned with its own lexeme's
# frequency: a common name walks the scope newest first and stops at the fifth match, a rare one takes its few rows
# from the GIN index. A name rare in the table may be common in its scope: where the scope's own word counts
# (ScopeWords) say it holds more than sqrt(per_entity x items) of them, the branch matches it by ts_match_vq, the same
# test as @@ that no index serves, and walks the scope (multi_hop._walked; the figures: docs/history.md).
# -- uses: facts_fact_scope_recorded (common names) or facts_fact_search_gin (rare names)
_NAME_MATCH = scoped_match("f", "to_tsquery('simple', quote_literal(lower(%(entity_{n})s)))")
_NAME_MATCH_WALKED = "ts_match_vq(f.search_vector, to_tsquery('simple', quote_literal(lower(%(entity_{n})s))))"


def multi_hop_branch(facts_filter: str, in_open_conflict: str, expired: str) -> str:
    """One entity's branch over the facts `facts_filter` keeps ({n}: the entity's number); replay as the memory
    was (context.retrieval_asof) passes its own filters."""
    return f"""
(SELECT %(entity_{{n}})s AS entity, {FACT_COLUMNS},
       {RECENCY} AS recency
   FROM facts_fact f
  WHERE {facts_filter}
    AND {_NAME_MATCH}
    AND NOT (f.id = ANY(%(exclude)s::uuid[]))
    AND NOT {in_open_conflict}
    AND NOT {expired}
  ORDER BY f.recorded_from DESC, f.text COLLATE "C", f.id
  LIMIT %(per_entity)s)"""


_MULTI_HOP_BRANCH = multi_hop_branch(HARD_FILTERS, _IN_OPEN_CONFLICT, _EXPIRED)


def multi_hop_sql(entities: int, walked=()) -> str:
    """The multi-hop statement for `entities` entities (parameters entity_0 .. entity_{n-1}); the branch of an
    entity whose number is in `walked` walks the scope newest first."""
    return "\nUNION ALL".join(
        (_MULTI_HOP_BRANCH.replace(_NAME_MATCH, _NAME_MATCH_WALKED) if i in walked else _MULTI_HOP_BRANCH).replace(
            "{n}", str(i)
        )
        for i in range(entities)
    )


# Multi-hop in a scope whose every active fact is already a candidate of the call (a plain call's WHOLE_SCOPE_SQL
# returned them all, with their block flags): what the branches above could bring back is among those candidates, so
# the statement only asks which of them name each entity (the same match, on the rows by id, under the hard filters
# again: a fact retracted since the candidates were read is not brought back) and the rest is done on the rows the
# call holds: the same exclusions (settled, in an open conflict, expired, the flags as the candidates statement read
# them), newest first, at most MULTI_HOP_MAX_PER_ENTITY per entity: a statement far cheaper to plan than the branches'.
# -- uses: facts_fact_scope_recorded (the scope's range, the ids among it)
def multi_hop_within_sql(entities: int) -> str:
    names = ",\n       ".join(f"{_NAME_MATCH.replace('{n}', str(i))} AS names_{i}" for i in range(entities))
    return f"""SELECT f.id,
       {names}
  FROM facts_fact f
 WHERE {HARD_FILTERS} AND f.id = ANY(%(ids)s::uuid[])"""


# Why a call that found no candidate at all came back empty (context.blocking.why_empty): does the subject hold a
# fact or an event a call may serve (`servable`), and was anything else ever written for it (`written`: a fact
# whatever its status, a procedure or an identity block of its own; the project-wide ones do not make a subject
# known). Asked only then: a call with a candidate knows its scope exists, so no call that serves something, and
# no empty one with candidates, pays for it. An as-of replay asks the same of the store at its time
# (retrieval_asof.SCOPE_STATE_AS_OF_SQL).
# -- uses: facts_fact_scope_status, facts_event_scope_time, facts_procedure_scope_created,
# --       identity_block_name_unique_in_scope: each EXISTS stops at the scope's first row
def scope_state_sql(servable_facts: str, *, as_of: bool = False) -> str:
    def at(alias: str, column: str) -> str:
        return f" AND {alias}.{column} <= %(now)s" if as_of else ""

    scope = "{a}.project_id = %(project_id)s AND {a}.subject_id = %(subject_id)s"
    return f"""
SELECT EXISTS (SELECT 1 FROM facts_fact f WHERE {servable_facts})
       OR EXISTS (SELECT 1 FROM facts_event e WHERE {scope.format(a="e")}{at("e", "recorded_at")}) AS servable,
       EXISTS (SELECT 1 FROM facts_fact f WHERE {scope.format(a="f")}{at("f", "recorded_from")})
       OR EXISTS (SELECT 1 FROM facts_procedure x WHERE {scope.format(a="x")}{at("x", "created_at")})
       OR EXISTS (SELECT 1 FROM facts_identityblock b WHERE {scope.format(a="b")}{at("b", "created_at")}) AS written
"""


SCOPE_STATE_SQL = scope_state_sql(HARD_FILTERS)


# Query-time contradictions (context/contradictions.py): the pairs among a call's fact candidates whose stored
# vectors are at least `min_similarity` alike, in one statement: the candidates' rows are read once, by id
# within the scope (invariant 1; they are active facts, and the status filter lets the planner read them from
# facts_fact_scope_vectors when that costs less), then compared pairwise: n (n - 1) / 2 distances, at most
# retrieval.CONTRADICTION_MAX_CANDIDATES candidates, of which the CONTRADICTION_MAX_PAIRS most alike go on to the
# rules in Python (their cost: docs/performance.md, Tiered calls). Negations, the most alike, come first. A pair whose
# distance is NaN (a vector of zeros, see distance_sql) fails `<=`: PostgreSQL sorts NaN above every number. A pair
# that already shares a conflict set is the store's business, not this call's: open, both are blocked and never
# candidates; closed with both still active, a curator dismissed it or kept both, and that stands at query time too.
# -- uses: facts_fact_pkey (one probe per candidate id) or facts_fact_scope_vectors (small scopes);
# --       facts_conflictmember_fact and conflict_member_unique for the pairs above the threshold only
# Pairs whose claims clash (facts.claims, read in Python before the statement) come back at any similarity, first:
# the claims, not the vectors, say they are about the same thing.
CONTRADICTION_PAIRS_SQL = """
WITH c AS MATERIALIZED (
    SELECT f.id, f.embedding FROM facts_fact f
     WHERE f.project_id = %(project_id)s AND f.subject_id = %(subject_id)s AND f.status = 'active'
       AND f.id = ANY(%(ids)s::uuid[])
)
SELECT a.id, b.id, 1 - p.distance AS similarity
  FROM c a JOIN c b ON a.id < b.id
 CROSS JOIN LATERAL (SELECT a.embedding <=> b.embedding AS distance,
                            (a.id, b.id) IN (SELECT * FROM unnest(%(claimed_a)s::uuid[], %(claimed_b)s::uuid[])) AS claimed) p
 WHERE (p.distance <= 1 - %(min_similarity)s OR p.claimed)
   AND NOT EXISTS (SELECT 1 FROM facts_conflictmember ma
                     JOIN facts_conflictmember mb ON mb.conflict_set_id = ma.conflict_set_id AND mb.fact_id = b.id
                                                 AND mb.project_id = ma.project_id
                     JOIN facts_conflictset s ON s.id = ma.conflict_set_id AND s.project_id = ma.project_id
                    WHERE ma.fact_id = a.id AND ma.project_id = %(project_id)s AND s.subject_id = %(subject_id)s)
 ORDER BY p.claimed DESC, p.distance, a.id, b.id
 LIMIT %(max_pairs)s
"""
