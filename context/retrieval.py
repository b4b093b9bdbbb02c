"""The retrieval SQL of POST /v1/context: every query the assembler runs against the memory store.

Invariants (each query below keeps all of them; tests/context/test_retrieval_plans.py checks the plans):
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
   each (_hybrid_sql), or facts and events in one statement for a plain call (_together_sql: each table's legs
   as above, the CANDIDATE_LIMIT best of both returned). A scope of at most DENSE_TOP_K rows a table is the whole
   of its legs' pool: a plain call then scores it whole (WHOLE_SCOPE_SQL, at most DENSE_TOP_K + 1 rows a table).
4. Parameters go through the driver; nothing is formatted into SQL text. The connection never uses
   server-side prepared statements (see hakimem/dbserver.py): generic plans lose the hnsw index.
"""
from __future__ import annotations

import math
import re
import weakref
from dataclasses import dataclass, field, replace
from datetime import datetime

from django.conf import settings
from django.db import transaction

from context import scoring
from facts.scope_graphs import SCOPE_GRAPH_PREFIX, scope_graph_name
from facts.text import STOP_WORDS
from hakimem.db import decay_sql, dict_rows
from hakimem.db_router import read_connection
from hakimem.embeddings import vector_literal

# Phase 1 fetches DENSE_TOP_K nearest rows and LEXICAL_TOP_K best full-text matches, for facts and episodes alike;
# phase 2 keeps the CANDIDATE_LIMIT best of both by hybrid score, the only items packed and traced. The dense leg is
# wide because recency and text rank reorder the pool (docs/tuning.md, phase-1 recall in docs/performance.md).
DENSE_TOP_K = 256
LEXICAL_TOP_K = 64
CANDIDATE_LIMIT = 128
MULTI_HOP_MAX_ENTITIES = 2
MULTI_HOP_MAX_PER_ENTITY = 5
LEXICAL_MAX_TERMS = 12  # longer queries keep their rarest-looking (longest) words

# hnsw returns at most ef_search rows per scan; with iterative scan it keeps walking the graph until the
# LIMIT is met after the scope filter, up to max_scan_tuples. relaxed_order lets it return slightly out of
# order; phase 2 ranks the rows again by hybrid score anyway.
HNSW_EF_SEARCH = 256
HNSW_MAX_SCAN_TUPLES = 20000

# Which way the dense leg goes: the exact sort reads the scope's vectors from the covering index (~0.26 us a row);
# the filtered hnsw scan visits about max(DENSE_TOP_K, ef_search) / (the scope's share of the table) tuples at
# ~11 us each. Exact wins while scope_rows^2 < 42 x 256 x table rows (docs/tuning.md#large-scopes).
EXACT_SCAN_US_PER_ROW = 0.26
HNSW_US_PER_VISITED_TUPLE = 11.0

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
# the lexical leg fetch and rank every row holding it. Such words leave the OR; if every word is that common,
# the leg asks for all of them together instead (a selective AND).
LEXICAL_MAX_TERM_FREQUENCY = 0.02
# The lexical leg costs one heap fetch and one ts_rank_cd per matching row of the scope (~4 us each). It keeps the
# rarest words while the rows they are expected to match in the scope stay under this; a dropped word still counts
# in the text rank of the rows a kept word found (text_rank_sql). The expectation comes from the scope's own word
# counts where it has them (ScopeWords, below), else from the word's share of the whole table, which a scope's own
# cast can far exceed: so the leg also reads at most LEXICAL_LEG_MAX_ROWS matches before ordering.
LEXICAL_LEG_MAX_MATCHES = 1000
LEXICAL_LEG_MAX_ROWS = 2000

# The tables a context call ranks; each has its own statistics, graph and covering index.
FACTS, EVENTS, PROCEDURES = "facts_fact", "facts_event", "facts_procedure"
RANKED_TABLES = (FACTS, EVENTS, PROCEDURES)

# The planner's own statistics, refreshed by autovacuum's ANALYZE: the table's row estimate, its most common
# lexemes (share of rows holding each) and its most common subjects (share of rows of each). pg_stats hides
# them from the row-security roles a request runs as: hakimem_table_stats (facts/migrations/0008, 0010) reads them
# as the tables' owner.
TABLE_STATS_SQL = """
SELECT * FROM hakimem_table_stats(%(table)s::regclass, %(scope_graphs)s)
"""


@dataclass(frozen=True)
class TableStats:
    rows: float = 0.0  # 0 until the table is first analysed: every estimate below is then 0 (no word dropped)
    term_freq: dict = field(default_factory=dict)
    subject_freq: dict = field(default_factory=dict)
    other_subject_freq: float = 0.0  # share of one subject outside the most common ones (the planner's formula)
    scope_graphs: frozenset = frozenset()  # names of the dedicated hnsw graphs (facts.scope_graphs.scope_graph_create)
    rarest_tracked: float = 0.0  # the smallest share pg_stats keeps for a lexeme: untracked words are rarer

    def term_weight(self, term: str) -> float:
        """A word's information, log(1 / share of rows holding it): a word the statistics do not list counts
        as rare as the rarest they do (or as one row of the table, before any ANALYZE)."""
        floor = self.rarest_tracked or (1.0 / self.rows if self.rows >= 1 else 1e-3)
        return math.log(1.0 / min(max(self.term_freq.get(term, floor), 1e-9), 1.0)) + 1e-6

    def scope_rows(self, subject_id: str, *, project_wide: bool = False) -> float:
        """Estimated rows of a subject, and with project_wide those of every project's whole-project rows
        (subject_id '', procedures). Subject ids are compared across projects: an over-estimate when two
        projects share one, which only makes the leg more careful."""
        rows = self.rows * self.subject_freq.get(subject_id, self.other_subject_freq)
        return rows + (self.scope_rows("") if project_wide else 0.0)

    def dense_exact(self, project_id: str, subject_id: str, *, project_wide: bool = False) -> bool:
        """True when sorting the scope exactly is expected to cost less than the filtered hnsw scan (always,
        until the table is first analysed: a new table is small). Never for a scope with its own graph."""
        if scope_graph_name(project_id, subject_id) in self.scope_graphs:
            return False
        scope = self.scope_rows(subject_id, project_wide=project_wide)
        if scope < 1:
            return True
        visited = max(DENSE_TOP_K, HNSW_EF_SEARCH) * self.rows / scope
        return scope * EXACT_SCAN_US_PER_ROW <= visited * HNSW_US_PER_VISITED_TUPLE


# What the statistics are at: per ranked table, its row estimate, how many times it was analysed, and its count of
# indexes (a scope graph is one). ANALYZE, VACUUM and a graph's creation change one of these whenever they change what
# hakimem_table_stats reads, so a process keeps its copy of the statistics exactly as long as this says they are the
# same: every worker then weighs a call's words alike, at the cost of this one catalogue read a call (~0.35 ms where
# SELECT 1 takes 0.05; reading the statistics themselves takes ~8 ms at 200k facts). ANALYZE counts itself before its
# transaction commits, so statistics read within STATS_SETTLE_SECONDS of an ANALYZE may predate it: they are read
# once more when that time has passed. Workers may disagree for that long after an ANALYZE, never longer. (Not in the version:
# a project's first row of a subject the table already counts among its most common, which names that subject in
# the project's statistics, a size estimate that picks a plan, from the next version on.) The counts come from
# the cumulative statistics, which a transaction keeps a copy of once read: the copy is dropped first (a long
# transaction, a test's, would see the counts of its start).
# -- uses: pg_class_oid_index, pg_index_indrelid_index
TABLE_STATS_VERSION_SQL = """
SELECT c.relname, c.reltuples,
       pg_stat_get_analyze_count(c.oid) + pg_stat_get_autoanalyze_count(c.oid),
       coalesce(greatest(pg_stat_get_last_analyze_time(c.oid), pg_stat_get_last_autoanalyze_time(c.oid))
                > statement_timestamp() - make_interval(secs => %(settle)s), false),
       (SELECT count(*) FROM pg_index x WHERE x.indrelid = c.oid)
  FROM (SELECT pg_stat_clear_snapshot()) fresh, pg_class c
 WHERE c.oid = ANY(%(tables)s::regclass[])"""
STATS_SETTLE_SECONDS = 5.0
# Projects whose statistics a process keeps at once (each project's name only its own subjects).
TABLE_STATS_MAX_PROJECTS = 256


@dataclass(frozen=True)
class StatsVersion:
    tables: tuple = ()  # per ranked table: (name, row estimate, analyses, indexes)
    settled: bool = field(default=True, compare=False)  # no table analysed within STATS_SETTLE_SECONDS

    def as_dict(self) -> dict:
        """For a call's trace: what the statistics that weighed its words were at."""
        return {name: {"rows": rows, "analyses": analyses, "indexes": indexes}
                for name, rows, analyses, indexes in self.tables}


@dataclass(frozen=True)
class _HeldStats:
    version: StatsVersion
    tables: dict  # {table: TableStats}
    settled: bool  # read under a settled version: kept until the version changes


_table_stats: dict[str | None, _HeldStats] = {}


def table_stats_version() -> StatsVersion:
    with read_connection().cursor() as cursor:
        cursor.execute(TABLE_STATS_VERSION_SQL, {"tables": list(RANKED_TABLES), "settle": STATS_SETTLE_SECONDS})
        rows = sorted(cursor.fetchall())
    return StatsVersion(tuple((name, float(tuples), analyses, indexes) for name, tuples, analyses, _, indexes in rows),
                        settled=not any(young for _, _, _, young, _ in rows))


def table_stats_refresh(project_id: str | None = None) -> StatsVersion:
    """Once a call, before any table_stats: the statistics as they are now, read again only when their version
    changed, or once more when it settled. Returns the version the call's statistics are at (for its trace)."""
    version = table_stats_version()
    held = _table_stats.get(project_id)
    if held is None or held.version != version or (version.settled and not held.settled):
        if project_id not in _table_stats and len(_table_stats) >= TABLE_STATS_MAX_PROJECTS:
            _table_stats.clear()
        _table_stats[project_id] = _HeldStats(version, {name: _read_table_stats(name) for name in RANKED_TABLES},
                                              version.settled)
    return version


def table_stats(table: str = FACTS, project_id: str | None = None) -> TableStats:
    """The statistics of `table` as the last table_stats_refresh of `project_id` read them (read now, if none did).
    They name only the subjects the caller may see (hakimem_table_stats): a request's, those of its project, kept
    under `project_id`; None for a caller row security does not bind (scripts, a test's own reads)."""
    if project_id not in _table_stats:
        table_stats_refresh(project_id)
    return _table_stats[project_id].tables[table]


def _read_table_stats(table: str) -> TableStats:
    with read_connection().cursor() as cursor:
        cursor.execute(TABLE_STATS_SQL, {"table": table, "scope_graphs": SCOPE_GRAPH_PREFIX + "%"})
        reltuples, elems, elem_freqs, subjects, subject_freqs, n_distinct, graphs = cursor.fetchone()
    term_freq = dict(zip(elems, elem_freqs)) if elems else {}  # elem_freqs has 3 trailing summary values
    rarest = float(elem_freqs[len(elems)]) if elems and len(elem_freqs) > len(elems) else 0.0  # the first: min
    # Another project's most common subjects come unnamed (None), their shares kept for the estimate below.
    subject_freq = {s: f for s, f in zip(subjects, subject_freqs) if s is not None} if subjects else {}
    other = 0.0
    if n_distinct:
        distinct = n_distinct if n_distinct > 0 else -n_distinct * max(reltuples, 0)
        listed = list(subject_freqs or [])[: len(subjects or [])]
        rest = distinct - len(listed)
        other = (1.0 - sum(listed)) / rest if rest >= 1 else 0.0
    return TableStats(rows=max(float(reltuples), 0.0), term_freq=term_freq, subject_freq=subject_freq,
                      other_subject_freq=max(other, 0.0), scope_graphs=frozenset(graphs), rarest_tracked=rarest)


# A large scope's own word counts (facts.models.ScopeWordCounts, kept by the nightly consolidation): for the words a
# call asks about, how many of the scope's items hold each. One round trip (~0.4-0.8 ms), made only where the planner's
# statistics expect the scope to hold at least half of settings.HAKI_SCOPE_WORDS_MIN_ITEMS facts or events: a small
# scope's call never pays it. A scope without counts has its words judged by their share of the table, as before; so
# does a large scope the statistics do not see as one (a subject outside their most common values), the lexical leg's
# row cap then bounding what that costs.
# -- uses: facts_scopewordcounts_pkey
SCOPE_WORDS_SQL = """
SELECT c.items_table, c.items, c.unlisted_max, w.word, w.items
  FROM facts_scopewordcounts c
  LEFT JOIN facts_scopeword w ON w.project_id = c.project_id AND w.subject_id = c.subject_id
                             AND w.items_table = c.items_table AND w.word = ANY(%(words)s)
 WHERE c.project_id = %(project_id)s AND c.subject_id = %(subject_id)s AND c.items_table = ANY(%(tables)s)"""


@dataclass(frozen=True)
class ScopeWords:
    """What a call read of a scope's word counts: the items counted, the counts of the words it asked about that are
    listed, and at most how many items hold a word that is not."""

    items: int
    counts: dict
    unlisted_max: int

    def holding(self, word: str, estimate: float) -> float:
        """Items of the scope holding `word`: its count, or for a word not listed the table's estimate within the
        most an unlisted word can hold."""
        return self.counts[word] if word in self.counts else min(float(self.unlisted_max), estimate)


def scope_words_read(project_id: str, subject_id: str, words, tables=(FACTS, EVENTS)) -> dict[str, ScopeWords]:
    """The scope's word counts per table (FACTS, EVENTS) for `words`; {} for a scope without counts."""
    counted: dict[str, ScopeWords] = {}
    with read_connection().cursor() as cursor:
        cursor.execute(SCOPE_WORDS_SQL, {"project_id": project_id, "subject_id": subject_id, "words": list(words),
                                         "tables": list(tables)})
        for table, items, unlisted_max, word, holding in cursor.fetchall():
            scope = counted.setdefault(table, ScopeWords(items, {}, unlisted_max))
            if word is not None:
                scope.counts[word] = holding
    return counted


@dataclass(frozen=True)
class TextQuery:
    """The two websearch_to_tsquery texts of a call against one table: `tsq` scores every candidate (the
    query's informative words ORed; all its words ANDed if none is informative), `leg_tsq` fetches the
    lexical leg's candidates (the rarest of those words, within LEXICAL_LEG_MAX_MATCHES expected rows;
    "" for no leg)."""

    tsq: str = ""
    leg_tsq: str = ""
    terms: tuple = ()  # the words of tsq, and the share of the query's information each carries (sum 1)
    weights: tuple = ()
    # Per word of `terms`: True when the lexical leg fetches its matches. A row's text rank counts only if it holds
    # one of these words (text_rank_sql). () means every word (a trace recorded before this rule replays as it ran).
    kept: tuple = ()


def _weighted(tsq: str, leg_tsq: str, terms: list[str], stats: TableStats, kept: set) -> TextQuery:
    weights = [stats.term_weight(t) for t in terms]
    total = sum(weights)
    return TextQuery(tsq, leg_tsq, tuple(terms), tuple(w / total for w in weights), tuple(t in kept for t in terms))


def text_queries(query: str, subject_id: str, table: str = FACTS, counted: ScopeWords | None = None, *,
                 project_id: str | None = None) -> TextQuery:
    """`counted`: the scope's own word counts, when it has them; the leg then picks its words by their count in the
    scope. A word's weight, and whether it is informative, stay its share of the whole table."""
    terms = lexical_terms(query)
    if not terms:
        return TextQuery()
    stats = table_stats(table, project_id)
    scope_rows = stats.scope_rows(subject_id, project_wide=table == PROCEDURES)
    freq = stats.term_freq

    def expected(t: str) -> float:  # the scope's rows holding t
        estimate = freq.get(t, 0.0) * scope_rows
        return counted.holding(t, estimate) if counted is not None else estimate

    informative = [t for t in terms if freq.get(t, 0.0) <= LEXICAL_MAX_TERM_FREQUENCY]
    if not informative:
        together = scope_rows
        for t in terms:
            together *= freq.get(t, 0.0)
        tsq = " ".join(terms)
        fetched = together <= LEXICAL_LEG_MAX_MATCHES
        return _weighted(tsq, tsq if fetched else "", terms, stats, set(terms) if fetched else set())
    kept, matches = set(), 0.0
    for t in sorted(informative, key=expected):
        matches += expected(t)
        if matches > LEXICAL_LEG_MAX_MATCHES:
            break
        kept.add(t)
    return _weighted(or_query(informative), or_query([t for t in informative if t in kept]), informative, stats, kept)


@dataclass(frozen=True)
class Lookup:
    """What every query of one context call shares: the scope, the call's clock and the volatility cutoffs
    derived from it, and the query's text against each table."""

    project_id: str
    subject_id: str
    now: datetime
    cutoffs: dict
    fact_text: TextQuery = TextQuery()
    event_text: TextQuery = TextQuery()
    procedure_text: TextQuery = TextQuery()
    # context.config.AssemblyConfig (weights, tau, widths) when a replay overrides them; None = the constants.
    config: object = None
    candidate_limit: int | None = None  # a call may ask for fewer or more (context.config.MAX_CANDIDATE_LIMIT)
    # The scope's own counts of the call's words, per table (FACTS, EVENTS) that has them (scope_words_read).
    scope_words: dict = field(default_factory=dict)
    stats_version: StatsVersion | None = None  # what the planner's statistics the call read were at

    def params(self, text: TextQuery) -> dict:
        c = self.config
        return {
            "project_id": self.project_id,
            "subject_id": self.subject_id,
            "tsq": text.tsq,
            "leg_tsq": text.leg_tsq,
            "terms": list(text.terms),
            "term_weights": list(text.weights),
            "term_kept": list(text.kept or [True] * len(text.terms)),
            "now": self.now,
            "tau_seconds": c.tau_seconds if c else scoring.TAU_SECONDS,
            "stable_cutoff": self.cutoffs["stable"],
            "volatile_cutoff": self.cutoffs["volatile"],
            "top_k": c.lexical_top_k if c else LEXICAL_TOP_K,
            "leg_max_rows": LEXICAL_LEG_MAX_ROWS,
            "dense_k": c.dense_top_k if c else DENSE_TOP_K,
            "candidate_limit": self.candidate_limit or CANDIDATE_LIMIT,
            "w_similarity": sql_weight(c.w_similarity if c else scoring.W_SIMILARITY),
            "w_text": sql_weight(c.w_text_rank if c else scoring.W_TEXT),
            "w_recency": sql_weight(c.w_recency if c else scoring.W_RECENCY),
        }


# The SQL orders by the hybrid score times SQL_SCORE_SCALE, which changes no order: a power of two scales every
# product and sum exactly. PostgreSQL raises `underflow` where a product of non-zero floats rounds to 0: 0.05 times a
# recency of 5e-324 (an item decayed to hakimem.db.DECAY_MIN_EXPONENT) did, as would a replay's w_recency of 1e-300
# times any recency under 1e-24. A non-zero weight goes to SQL as at least 1 (a weight under 2^-1000, which no sum of
# the score can show beside another part, counts as 2^-1000), so no weight times a part in [5e-324, 1] underflows,
# and the score stays under 4e301, far from overflow. The assembler scores the candidates again with the weights
# themselves (scoring.hybrid_score).
SQL_SCORE_SCALE = 2.0**1000


def sql_weight(weight: float) -> float:
    return max(weight, 1.0 / SQL_SCORE_SCALE) * SQL_SCORE_SCALE if weight else 0.0


def _may_have_counts(project_id: str, subject_id: str) -> bool:
    least = settings.HAKI_SCOPE_WORDS_MIN_ITEMS / 2
    return least > 0 and any(table_stats(t, project_id).scope_rows(subject_id) >= least for t in (FACTS, EVENTS))


def lookup_for(*, project_id: str, subject_id: str, query: str, now: datetime, cutoffs: dict, config=None,
               candidate_limit: int | None = None) -> Lookup:
    version = table_stats_refresh(project_id)
    counted = (scope_words_read(project_id, subject_id, lexical_terms(query))
               if _may_have_counts(project_id, subject_id) else {})
    return Lookup(project_id=project_id, subject_id=subject_id, now=now, cutoffs=cutoffs,
                  fact_text=text_queries(query, subject_id, FACTS, counted.get(FACTS), project_id=project_id),
                  event_text=text_queries(query, subject_id, EVENTS, counted.get(EVENTS), project_id=project_id),
                  procedure_text=text_queries(query, subject_id, PROCEDURES, project_id=project_id), config=config,
                  candidate_limit=candidate_limit, scope_words=counted, stats_version=version)


@dataclass
class Candidate:
    id: object
    text: str
    category: str
    kind: str
    importance: float
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


@dataclass
class ProcedureCandidate:
    id: object
    title: str
    text: str
    category: str
    importance: float
    metadata: dict
    updated_at: datetime
    similarity: float | None
    distance: float | None
    text_rank: float
    recency: float
    score: float = 0.0


_TUNED_CONNECTIONS: "weakref.WeakSet" = weakref.WeakSet()


def _settings_for_hnsw(cursor, connection) -> None:
    """Once per database connection: session-level settings (SET LOCAL would need a transaction around
    a read-only query), so the hot path does not pay a round trip for them on every call. Inside a
    transaction (every API request's, hakimem/rowsecurity.py) the connection counts as tuned once that
    transaction commits: a rollback would undo them. `connection` is the one the call reads on (a read replica's
    connections are tuned on their own)."""
    raw = connection.connection
    if raw in _TUNED_CONNECTIONS:
        return
    cursor.execute(
        "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', false),"
        " set_config('hnsw.ef_search', %(ef)s, false), set_config('hnsw.max_scan_tuples', %(max)s, false)",
        {"ef": str(HNSW_EF_SEARCH), "max": str(HNSW_MAX_SCAN_TUPLES)},
    )
    if connection.in_atomic_block:
        transaction.on_commit(lambda: _TUNED_CONNECTIONS.add(raw), using=connection.alias)
    else:
        _TUNED_CONNECTIONS.add(raw)


_FACT_COLUMNS = """
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

# Recency decays in double precision: date_part('epoch', ...) is a float8, where extract(epoch FROM ...) is a numeric
# whose exp() costs about five times as much a row, for the same ranks (docs/history.md). The exponent stops
# at hakimem.db.DECAY_MIN_EXPONENT: an event of 1950 or a replay's tau of 0.01 day made exp() underflow, and PostgreSQL
# failed every call of the scope (tests/context/test_recency_bounds.py).
_RECENCY = decay_sql("%(now)s", "coalesce(f.valid_from, f.recorded_from)", "tau_seconds")
_EVENT_RECENCY = decay_sql("%(now)s", "e.occurred_at", "tau_seconds")
# A procedure is as fresh as its last edit: its steps are kept current in place.
_PROCEDURE_RECENCY = decay_sql("%(now)s", "x.updated_at", "tau_seconds")

_HARD_FILTERS = """f.project_id = %(project_id)s AND f.subject_id = %(subject_id)s AND f.status = 'active'
                   AND (f.valid_to IS NULL OR f.valid_to > %(now)s)"""


# ts_rank_cd's normalisation 32 maps a rank r to r / (r + 1), bounded in [0, 1). It stands for the text rank where
# the lexical legs order their matches (cheap, no subquery per row); the score uses text_rank_sql below.
TS_RANK_NORMALISATION = 32


def lexical_order_sql(alias: str, tsq_param: str) -> str:
    return f"ts_rank_cd({alias}.search_vector, websearch_to_tsquery('simple', %({tsq_param})s), {TS_RANK_NORMALISATION})"


def text_rank_sql(alias: str) -> str:
    """The share of the query's information a row holds: the weights (TextQuery.weights, log inverse row
    share, summing to 1) of the query words it contains. In [0, 1] like the similarity, and a rare word counts
    for more than a common one. ts_rank_cd, the rank the specification names, ignores how rare a word is and stays near 0.1
    for a row matching one word of an ORed query, so that with W_TEXT 0.25 the words moved almost nothing
    (docs/quality.md, LoCoMo). The lexical leg orders its matches with ts_rank_cd in this rank's place (_legs):
    this rank costs a subquery per matching row. Each word's tsquery is parsed once per statement (an
    uncorrelated InitPlan), not once per row and word.

    A row counts only if it holds a word the lexical leg fetches (TextQuery.kept): a word too common in the scope
    to fetch ("job" in 1,900 facts of a 100k scope) then adds to the rank of the rows a rarer word found, and ranks
    nothing alone. Counted alone it filled the exact top-20 with rows that hold only it, which neither leg can
    reach (docs/performance.md, phase-1 recall). In a scope where the leg fetches every word
    the rule changes nothing."""
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
    return (f"{alias}.search_vector @@ (CASE WHEN numnode({tsquery}) = 0 THEN NULL"
            f" ELSE {tsquery} && hakimem_scope_query(%(project_id)s, %(subject_id)s) END)")


# The degraded path's only leg: top-K by full-text rank over the whole informative query ("" matches nothing
# and the path falls back to recency), of at most LEXICAL_LEG_MAX_ROWS matches, as the two-phase path's lexical leg.
# -- uses: facts_fact_search_gin
_LEXICAL_LEG = f"""    SELECT f.id FROM (SELECT f.id, f.text, f.search_vector, f.recorded_from FROM facts_fact f
                        WHERE {_HARD_FILTERS} AND %(tsq)s <> ''
                          AND {scoped_match("f", "websearch_to_tsquery('simple', %(tsq)s)")}
                        LIMIT %(leg_max_rows)s) f
     ORDER BY {lexical_order_sql("f", "tsq")} DESC, f.recorded_from DESC, f.text COLLATE "C", f.id
     LIMIT %(top_k)s"""


# Phase 2's columns besides the distance, for a fact `f` of a leg.
_SCORED_POOL = f"""       {text_rank_sql("f")} AS text_rank,
       {_RECENCY} AS recency,
       {_BLOCK_FLAGS}"""


def _distance(a: str) -> str:
    """The cosine distance of `a`'s row to the query. A stored vector of zeros (a text the embedder found nothing
    in, such as "!!!" for the hashing embedder) has no direction: pgvector answers NaN, which PostgreSQL sorts
    above every score (served first) and which the trace's JSON cannot hold (the call failed with a 500). It
    counts as unrelated: distance 1."""
    return f"COALESCE(NULLIF({a}.embedding <=> (SELECT v FROM q), 'NaN'::float8), 1.0)"


@dataclass(frozen=True)
class _Source:
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


_FACTS = _Source(
    table=FACTS, a="f", filters=_HARD_FILTERS, recency=_RECENCY,
    row=f"""{_FACT_COLUMNS},
       {_distance("f")} AS distance,
{_SCORED_POOL}""",
)
# Episodes have no status, validity or conflicts: the scope is their only hard filter.
_EVENTS = _Source(
    table=EVENTS, a="e", filters="e.project_id = %(project_id)s AND e.subject_id = %(subject_id)s", recency=_EVENT_RECENCY,
    row=f"""
       e.id, e.text, e.occurred_at, e.metadata,
       {_distance("e")} AS distance,
       {text_rank_sql("e")} AS text_rank,
       {_EVENT_RECENCY} AS recency""",
)

# Procedures: the subject's own and the project's (subject_id ''), active ones only: two scopes, so their
# full-text index is the plain one (a scope holds few procedures).
_PROCEDURES = _Source(
    table=PROCEDURES, a="x", recency=_PROCEDURE_RECENCY, scoped_text=False,
    filters="x.project_id = %(project_id)s AND x.subject_id IN (%(subject_id)s, '') AND x.status = 'active'",
    row=f"""
       x.id, x.title, x.text, x.category, x.importance, x.metadata, x.updated_at,
       {_distance("x")} AS distance,
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


def _legs(src: _Source, *, exact: bool, name: str = "") -> str:
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
                    ORDER BY %(w_similarity)s * (1 - {_distance(a)}) + %(w_text)s * {lexical_order_sql(a, "leg_tsq")}
                             + %(w_recency)s * {src.recency} DESC, {a}.text COLLATE "C", {a}.id
                    LIMIT %(top_k)s) {name}lexical
)"""


def _scored(src: _Source, name: str = "") -> str:
    """Phase 2's columns of every row of `{name}pool` (_legs): what packing needs and the parts of the score."""
    return f"SELECT {src.row} FROM {name}pool {src.a}"


# The query vector is sent once (CTE `q`: as a literal repeated in three places it cost ~1.5 ms of parsing per call)
# and reaches the hnsw scan as an InitPlan parameter.
_QUERY_VECTOR = "WITH q AS MATERIALIZED (SELECT %(qvec)s::halfvec AS v)"


def _hybrid_sql(src: _Source, *, exact: bool) -> str:
    """Phase 1 + phase 2 in one round trip, for facts, episodes or procedures (_legs, _scored)."""
    return f"""
{_QUERY_VECTOR}, {_legs(src, exact=exact)}
SELECT *, 1 - distance AS similarity FROM ({_scored(src)}) pool{_BY_HYBRID_SCORE}
"""


# A call's text query against the events table, beside the one against facts in the same statement
# (TOGETHER_SQL): its parameters under their own names.
EPISODE_TEXT_PREFIX = "episode_"
_TEXT_PARAMS = ("tsq", "leg_tsq", "terms", "term_weights", "term_kept")


def _episode_text_params(sql: str) -> str:
    for name in _TEXT_PARAMS:
        sql = sql.replace(f"%({name})s", f"%({EPISODE_TEXT_PREFIX}{name})s")
    return sql


# One row shape for both kinds of candidate: each kind's own columns, NULL for the other's.
_FACT_ROWS = f"""SELECT 'fact' AS item_type, id, text, category, kind, importance, metadata, valid_from, recorded_from,
           NULL::timestamptz AS occurred_at, distance, text_rank, recency, in_open_conflict, expired
      FROM ({_scored(_FACTS, "f_")}) facts"""
_EPISODE_ROWS = f"""SELECT 'episode', id, text, NULL, NULL, NULL, metadata, NULL, NULL,
           occurred_at, distance, text_rank, recency, false, false
      FROM ({_scored(_EVENTS, "e_")}) events"""


def _together_sql(*, facts_exact: bool, events_exact: bool) -> str:
    """A plain call's facts and episodes in one round trip: both tables' legs (_legs), each table's pool scored
    (_scored), then the CANDIDATE_LIMIT best of all their rows by hybrid score. A plain call ranks facts and
    episodes together by that same score (context.assembler.rank_candidates), so these are the call's candidates,
    in its order; two statements returned up to twice as many rows, and the assembler dropped half of them. The
    events' text query has its own parameters (EPISODE_TEXT_PREFIX)."""
    return f"""
{_QUERY_VECTOR}, {_legs(_FACTS, exact=facts_exact, name="f_")},
{_episode_text_params(_legs(_EVENTS, exact=events_exact, name="e_"))}
SELECT *, 1 - distance AS similarity FROM ({_FACT_ROWS}
     UNION ALL {_episode_text_params(_EPISODE_ROWS)}) pool{_BY_HYBRID_SCORE}
"""


# -- uses: facts_fact_embedding_hnsw (dense leg), facts_fact_search_gin (lexical leg)
HYBRID_CANDIDATES_SQL = _hybrid_sql(_FACTS, exact=False)
# -- uses: facts_fact_scope_vectors (dense leg), facts_fact_search_gin (lexical leg)
HYBRID_EXACT_CANDIDATES_SQL = _hybrid_sql(_FACTS, exact=True)
# -- uses: facts_event_embedding_hnsw (dense leg), facts_event_search_gin (lexical leg)
EPISODES_HYBRID_SQL = _hybrid_sql(_EVENTS, exact=False)
# -- uses: facts_event_scope_vectors (dense leg), facts_event_search_gin (lexical leg)
EPISODES_HYBRID_EXACT_SQL = _hybrid_sql(_EVENTS, exact=True)
# -- uses: facts_procedure_embedding_hnsw (dense leg), facts_procedure_search_gin (lexical leg)
PROCEDURES_HYBRID_SQL = _hybrid_sql(_PROCEDURES, exact=False)
# -- uses: facts_procedure_scope_vectors (dense leg: the subject's range and the project's), facts_procedure_search_gin
PROCEDURES_HYBRID_EXACT_SQL = _hybrid_sql(_PROCEDURES, exact=True)
# A plain call's facts and episodes together, by (facts exact, events exact): the four combinations of the above.
# -- uses: what HYBRID_CANDIDATES_SQL / HYBRID_EXACT_CANDIDATES_SQL and EPISODES_HYBRID_SQL / EPISODES_HYBRID_EXACT_SQL use
TOGETHER_SQL = {(f, e): _together_sql(facts_exact=f, events_exact=e) for f in (False, True) for e in (False, True)}

# A scope that holds at most DENSE_TOP_K rows of a table is wholly in that table's dense leg when the leg sorts the
# scope exactly (every small scope's case: TableStats.dense_exact), and its lexical leg then reads nothing (it keeps
# only rows the dense leg does not hold): the pool is the whole scope. Most scopes are such (a subject's tens or
# hundreds of facts), and for them the two phases are overhead: sorting the scope to keep all of it, fetching each
# row again by id, planning a lexical leg with nothing to find (docs/performance.md). WHOLE_SCOPE_SQL reads each table's scope whole, at most dense_k + 1 rows
# of it, scores every row as phase 2 does and returns the same candidates in the same order, with each table's count
# of rows read (scope_facts, scope_events). (Where the dense leg would have walked a graph, a small scope that kept
# its own graph after shrinking, it returns the exact pool the walk approximates, rows of zero vectors included,
# which the hnsw index leaves out.) A count above dense_k means the scope was larger than the planner's statistics
# said: that pool is cut short, and the call runs TOGETHER_SQL instead (candidates_together). The statistics choose
# this statement only for scopes they expect at WHOLE_SCOPE_MAX_SHARE of dense_k; a subject they do not know is
# estimated at the average of the others, so the wasted statement (~3 ms for 257 rows a table) is paid only by a
# scope that grew past dense_k since the last ANALYZE (autovacuum's, after 2 % of the table is new).
# -- uses: facts_fact_scope_recorded and facts_event_scope_vectors (the scope's rows, in no order)
WHOLE_SCOPE_MAX_SHARE = 0.5


def _whole_pool(src: _Source, name: str) -> str:
    return f"""{name}pool AS (
    SELECT {src.a}.* FROM {src.table} {src.a} WHERE {src.filters} LIMIT %(dense_k)s + 1
)"""


WHOLE_SCOPE_SQL = f"""
{_QUERY_VECTOR}, {_whole_pool(_FACTS, "f_")}, {_whole_pool(_EVENTS, "e_")}
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
     WHERE {_HARD_FILTERS} AND NOT EXISTS (SELECT 1 FROM lexical)
     ORDER BY f.recorded_from DESC, f.text COLLATE "C", f.id
     LIMIT %(top_k)s
), pool AS (
    SELECT id FROM lexical UNION ALL SELECT id FROM recent
)
SELECT {_FACT_COLUMNS},
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
 WHERE {_EVENTS.filters}
 ORDER BY (%(tsq)s <> '' AND e.search_vector @@ websearch_to_tsquery('simple', %(tsq)s)) DESC, e.occurred_at DESC,
          e.text COLLATE "C", e.id
 LIMIT %(top_k)s
"""

# Degraded path for procedures: full-text matches first, then the most recently edited. A scope holds few
# procedures: its rows are read from the scope index and sorted.
# -- uses: facts_procedure_scope_vectors (the scope's active rows)
PROCEDURES_LEXICAL_SQL = f"""
SELECT x.id, x.title, x.text, x.category, x.importance, x.metadata, x.updated_at,
       {_PROCEDURE_RECENCY} AS recency,
       NULL::float8 AS similarity, NULL::float8 AS distance,
       {text_rank_sql("x")} AS text_rank
  FROM facts_procedure x
 WHERE {_PROCEDURES.filters}
 ORDER BY (%(tsq)s <> '' AND x.search_vector @@ websearch_to_tsquery('simple', %(tsq)s)) DESC, x.updated_at DESC,
          x.text COLLATE "C", x.id
 LIMIT %(top_k)s
"""

# Multi-hop: facts naming one of the entities found in the facts already served. Full text only (no new
# embedding), one hop, at most MULTI_HOP_MAX_PER_ENTITY per entity, the newest first (ties by text, then id: what an
# export and import keep, so that a copy of the scope hops alike); blocked facts never come
# back here. Newest first rather than by ts_rank_cd: a single-lexeme query ranks every match nearly alike,
# and ranking them all cost 25 ms (p95 117 ms) in a 100k-fact scope where a name appears in thousands of
# facts. One branch per entity, each with its own parameter, so that each is planned with its own lexeme's
# frequency: a common name walks the scope newest first and stops at the fifth match, a rare one (50 facts
# in 100k) takes its few rows from the GIN index. A single plan for all entities (a LATERAL join over an
# array) walked the scope for rare names too: 35 ms.
# The planner judges a name by its share of the whole table, and a scope's own cast is rare in the table and common
# in the scope: at 1M facts it fetched all 4,655 facts naming a 10k scope's protagonist where the walk stops at the
# fifth. A scope with its own word counts (ScopeWords) tells: a name held by more than sqrt(per_entity x items) of
# them (the walk reads ~per_entity x items / count rows, the fetch `count`) is matched by ts_match_vq, the same test
# as @@ that no index serves, so the branch walks the scope newest first.
# -- uses: facts_fact_scope_recorded (common names) or facts_fact_search_gin (rare names)
_NAME_MATCH = scoped_match("f", "to_tsquery('simple', quote_literal(lower(%(entity_{n})s)))")
_NAME_MATCH_WALKED = "ts_match_vq(f.search_vector, to_tsquery('simple', quote_literal(lower(%(entity_{n})s))))"


def multi_hop_branch(facts_filter: str, in_open_conflict: str, expired: str) -> str:
    """One entity's branch over the facts `facts_filter` keeps ({n}: the entity's number); replay as the memory
    was (context.retrieval_asof) passes its own filters."""
    return f"""
(SELECT %(entity_{{n}})s AS entity, {_FACT_COLUMNS},
       {_RECENCY} AS recency
   FROM facts_fact f
  WHERE {facts_filter}
    AND {_NAME_MATCH}
    AND NOT (f.id = ANY(%(exclude)s::uuid[]))
    AND NOT {in_open_conflict}
    AND NOT {expired}
  ORDER BY f.recorded_from DESC, f.text COLLATE "C", f.id
  LIMIT %(per_entity)s)"""


_MULTI_HOP_BRANCH = multi_hop_branch(_HARD_FILTERS, _IN_OPEN_CONFLICT, _EXPIRED)


def multi_hop_sql(entities: int, walked=()) -> str:
    """The multi-hop statement for `entities` entities (parameters entity_0 .. entity_{n-1}); the branch of an
    entity whose number is in `walked` walks the scope newest first."""
    return "\nUNION ALL".join(
        (_MULTI_HOP_BRANCH.replace(_NAME_MATCH, _NAME_MATCH_WALKED) if i in walked else _MULTI_HOP_BRANCH)
        .replace("{n}", str(i)) for i in range(entities))


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
 WHERE {_HARD_FILTERS} AND f.id = ANY(%(ids)s::uuid[])"""


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
    return {i for i, name in enumerate(names)
            if counted.holding(name, 0.0) ** 2 > MULTI_HOP_MAX_PER_ENTITY * counted.items}


def _candidate(r: dict) -> Candidate:
    """A fact row as a Candidate; the multi-hop query selects no similarity, text rank or block flags (its
    facts are found by a shared name, and blocked facts are filtered out in its SQL)."""
    return Candidate(
        id=r["id"], text=r["text"], category=r["category"], kind=r["kind"], importance=r["importance"], metadata=r["metadata"],
        valid_from=r["valid_from"], recorded_from=r["recorded_from"], similarity=r.get("similarity"),
        distance=r.get("distance"), text_rank=float(r.get("text_rank") or 0.0), recency=float(r["recency"]),
        in_open_conflict=bool(r.get("in_open_conflict")), expired=bool(r.get("expired")),
    )


def _dense_exact(lookup: Lookup, table: str) -> bool:
    return table_stats(table, lookup.project_id).dense_exact(lookup.project_id, lookup.subject_id,
                                                             project_wide=table == PROCEDURES)


def _ranked_rows(lookup: Lookup, qvec, table: str, text: TextQuery, graph_sql: str, exact_sql: str, degraded_sql: str) -> list[dict]:
    params = lookup.params(text)
    connection = read_connection()
    with connection.cursor() as cursor:
        if qvec is None:
            cursor.execute(degraded_sql, params)
        else:
            if _dense_exact(lookup, table):
                sql = exact_sql
            else:
                _settings_for_hnsw(cursor, connection)
                sql = graph_sql
            cursor.execute(sql, {**params, "qvec": vector_literal(qvec)})
        return dict_rows(cursor, json_columns=["metadata"])


def whole_scope_expected(lookup: Lookup, dense_k: int) -> bool:
    """Whether the planner's statistics expect the scope to hold few enough facts and events for WHOLE_SCOPE_SQL
    (always, until the tables are first analysed: a new table is small)."""
    least = dense_k * WHOLE_SCOPE_MAX_SHARE
    return all(table_stats(t, lookup.project_id).scope_rows(lookup.subject_id) <= least for t in (FACTS, EVENTS))


def candidates_together(lookup: Lookup, *, qvec) -> tuple[list[Candidate], list[EpisodeCandidate], bool]:
    """A plain call's candidates, facts and episodes, in one statement: the CANDIDATE_LIMIT best of both by hybrid
    score, from the whole scope when it is small (WHOLE_SCOPE_SQL), else from both tables' two phases (TOGETHER_SQL).
    Only for a call that ranks by the hybrid score alone, with a query vector. The third value: whether the facts
    returned are every active fact of the scope (multi_hop_within may then answer multi-hop)."""
    params = {**lookup.params(lookup.fact_text), "qvec": vector_literal(qvec)}
    episode_params = lookup.params(lookup.event_text)
    params.update({EPISODE_TEXT_PREFIX + name: episode_params[name] for name in _TEXT_PARAMS})
    connection = read_connection()
    with connection.cursor() as cursor:
        if whole_scope_expected(lookup, params["dense_k"]):
            cursor.execute(WHOLE_SCOPE_SQL, params)
            rows = dict_rows(cursor, json_columns=["metadata"])
            scope_facts, scope_events = (rows[0]["scope_facts"], rows[0]["scope_events"]) if rows else (0, 0)
            if max(scope_facts, scope_events) <= params["dense_k"]:  # else its pool was cut short: the two phases
                facts, episodes = _facts_and_episodes(rows)
                # Every active fact of the scope is a candidate, unless some were cut at the candidate limit.
                return facts, episodes, len(facts) == scope_facts
        facts_exact, events_exact = _dense_exact(lookup, FACTS), _dense_exact(lookup, EVENTS)
        if not (facts_exact and events_exact):
            _settings_for_hnsw(cursor, connection)
        cursor.execute(TOGETHER_SQL[facts_exact, events_exact], params)
        rows = dict_rows(cursor, json_columns=["metadata"])
    return *_facts_and_episodes(rows), False


def _facts_and_episodes(rows: list[dict]) -> tuple[list[Candidate], list[EpisodeCandidate]]:
    return ([_candidate(r) for r in rows if r["item_type"] == "fact"],
            [_episode(r) for r in rows if r["item_type"] == "episode"])


def fact_candidates(lookup: Lookup, *, qvec) -> list[Candidate]:
    rows = _ranked_rows(lookup, qvec, FACTS, lookup.fact_text, HYBRID_CANDIDATES_SQL, HYBRID_EXACT_CANDIDATES_SQL,
                        LEXICAL_CANDIDATES_SQL)
    return [_candidate(r) for r in rows]


def episode_candidates(lookup: Lookup, *, qvec) -> list[EpisodeCandidate]:
    rows = _ranked_rows(lookup, qvec, EVENTS, lookup.event_text, EPISODES_HYBRID_SQL, EPISODES_HYBRID_EXACT_SQL,
                        EPISODES_LEXICAL_SQL)
    return [_episode(r) for r in rows]


def procedure_candidates(lookup: Lookup, *, qvec) -> list[ProcedureCandidate]:
    """The subject's and the project's active procedures for the call, at most CANDIDATE_LIMIT, best hybrid score
    first (qvec None: the degraded path's order)."""
    rows = _ranked_rows(lookup, qvec, PROCEDURES, lookup.procedure_text, PROCEDURES_HYBRID_SQL,
                        PROCEDURES_HYBRID_EXACT_SQL, PROCEDURES_LEXICAL_SQL)
    return [
        ProcedureCandidate(
            id=r["id"], title=r["title"], text=r["text"], category=r["category"], importance=float(r["importance"]),
            metadata=r["metadata"], updated_at=r["updated_at"], similarity=r["similarity"], distance=r["distance"],
            text_rank=float(r["text_rank"] or 0.0), recency=float(r["recency"]),
        )
        for r in rows
    ]


def _episode(r: dict) -> EpisodeCandidate:
    return EpisodeCandidate(
        id=r["id"], text=r["text"], occurred_at=r["occurred_at"], metadata=r["metadata"],
        similarity=r["similarity"], distance=r["distance"], text_rank=float(r["text_rank"] or 0.0),
        recency=float(r["recency"]),
    )


def multi_hop_within(lookup: Lookup, *, entities: list[str], scope_facts: list[Candidate],
                     exclude_ids: list) -> list[tuple[str, Candidate]]:
    """multi_hop_candidates' answer, in a scope whose every active fact is in `scope_facts` (multi_hop_within_sql)."""
    excluded = set(exclude_ids)
    eligible = [c for c in scope_facts if c.id not in excluded and not c.in_open_conflict and not c.expired]
    if not entities or not eligible:
        return []
    params = {**lookup.params(TextQuery()), **{f"entity_{i}": entity for i, entity in enumerate(entities)},
              "ids": [str(c.id) for c in eligible]}
    with read_connection().cursor() as cursor:
        cursor.execute(multi_hop_within_sql(len(entities)), params)
        names = {row[0]: row[1:] for row in cursor.fetchall()}
    newest_first = sorted(sorted((c for c in eligible if c.id in names), key=lambda c: (c.text, str(c.id))),
                          key=lambda c: c.recorded_from, reverse=True)  # as the statement's ORDER BY
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
    return [(r["entity"], _candidate(r)) for r in rows]


# Why a call that found no candidate at all came back empty (context.assembler.why_empty): does the subject hold a
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


SCOPE_STATE_SQL = scope_state_sql(_HARD_FILTERS)


@dataclass(frozen=True)
class ScopeState:
    written: bool  # anything was ever written for the subject (servable or not)
    servable: bool  # it holds a fact or an event a call may serve


def scope_state(lookup: Lookup, sql: str = SCOPE_STATE_SQL) -> ScopeState:
    with read_connection().cursor() as cursor:
        cursor.execute(sql, {"project_id": lookup.project_id, "subject_id": lookup.subject_id, "now": lookup.now})
        servable, written = cursor.fetchone()
    return ScopeState(written=servable or written, servable=servable)


# Query-time contradictions (context/contradictions.py): the pairs among a call's fact candidates whose stored
# vectors are at least `min_similarity` alike, in one statement: the candidates' rows are read once, by id
# within the scope (invariant 1; they are active facts, and the status filter lets the planner read them from
# facts_fact_scope_vectors when that costs less), then compared pairwise: n (n - 1) / 2 distances, at most
# CONTRADICTION_MAX_CANDIDATES candidates (~1 us each: 64 candidates 1.6 ms, 128 candidates 7.8 ms), of which
# the CONTRADICTION_MAX_PAIRS most alike go on to the rules (~50 us a pair in Python): on a chat stored turn by
# turn, 128 candidates held ~160 pairs above 0.75, and 128 facts that all say where Paul lives 2,470
# (scripts/bench_contradictions.py). Negations, the most alike, come first. A pair whose distance is NaN (a
# vector of zeros, see _distance) fails `<=`: PostgreSQL sorts NaN above every number. A pair that already shares a conflict set is the store's
# business, not this call's: open, both are blocked and never candidates; closed with both still active, a
# curator dismissed it or kept both, and that decision stands at query time too.
# -- uses: facts_fact_pkey (one probe per candidate id) or facts_fact_scope_vectors (small scopes);
# --       facts_conflictmember_fact and conflict_member_unique for the pairs above the threshold only
# Pairs whose claims clash (facts.claims, read in Python before the statement) come back at any similarity, first:
# the claims, not the vectors, say they are about the same thing.
CONTRADICTION_MAX_CANDIDATES = 64
CONTRADICTION_MAX_PAIRS = 256
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


def similar_pairs(*, project_id: str, subject_id: str, ids: list, min_similarity: float,
                  claimed: list[tuple] = ()) -> list[tuple]:
    """(id, id, similarity) for the CONTRADICTION_MAX_PAIRS most alike pairs of the scope's active facts `ids` at
    least `min_similarity` alike, and the `claimed` pairs (id, id) at any similarity, first, that share no
    conflict set."""
    if len(ids) < 2:
        return []
    with read_connection().cursor() as cursor:
        cursor.execute(CONTRADICTION_PAIRS_SQL, {"project_id": project_id, "subject_id": subject_id,
                                                 "ids": [str(i) for i in ids], "min_similarity": min_similarity,
                                                 "claimed_a": [str(min(str(a), str(b))) for a, b in claimed],
                                                 "claimed_b": [str(max(str(a), str(b))) for a, b in claimed],
                                                 "max_pairs": CONTRADICTION_MAX_PAIRS})
        return [(a, b, float(similarity)) for a, b, similarity in cursor.fetchall()]
