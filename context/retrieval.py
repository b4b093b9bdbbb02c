"""The reads of POST /v1/context: what a call asks of each table (its text queries, weighed by the planner's
statistics and a large scope's own word counts), which statement answers it (context/retrieval_sql.py, whose opening
states the invariants every statement keeps), and the candidates they return (context/candidates.py). Multi-hop's
reads are context/multi_hop.py.
"""

from __future__ import annotations

import math
import re
import time
import weakref
from dataclasses import dataclass, field, replace
from datetime import datetime

from django.conf import settings
from django.db import transaction

from context import scoring
from context.candidates import (
    Candidate,
    EpisodeCandidate,
    ProcedureCandidate,
    episode_candidate,
    fact_candidate,
    procedure_candidate,
)
from context.retrieval_sql import (
    CITUS_TABLE_STATS_SQL,
    CITUS_TABLE_STATS_VERSION_SQL,
    CONTRADICTION_PAIRS_SQL,
    EPISODE_TEXT_PREFIX,
    EPISODES_HYBRID_EXACT_SQL,
    EPISODES_HYBRID_SQL,
    EPISODES_LEXICAL_SQL,
    EVENTS,
    FACTS,
    HYBRID_CANDIDATES_SQL,
    HYBRID_EXACT_CANDIDATES_SQL,
    LEXICAL_CANDIDATES_SQL,
    NEXT_TURNS_SQL,
    PROCEDURES,
    PROCEDURES_HYBRID_EXACT_SQL,
    PROCEDURES_HYBRID_SQL,
    PROCEDURES_LEXICAL_SQL,
    SCOPE_STATE_SQL,
    SCOPE_WORDS_SQL,
    TABLE_STATS_SQL,
    TABLE_STATS_VERSION_SQL,
    TEXT_PARAMS,
    TOGETHER_SQL,
    WHOLE_SCOPE_SQL,
)
from facts.scope_graphs import SCOPE_GRAPH_PREFIX, scope_graph_name
from facts.text import STOP_WORDS
from hakimem.citus import on_citus
from hakimem.db import dict_rows
from hakimem.db_router import read_connection
from hakimem.embeddings import vector_literal

# Phase 1 fetches DENSE_TOP_K nearest rows and LEXICAL_TOP_K best full-text matches, for facts and episodes alike;
# phase 2 keeps the CANDIDATE_LIMIT best of both by hybrid score, the only items packed and traced. The dense leg is
# wide because recency and text rank reorder the pool (docs/tuning.md, phase-1 recall in docs/performance.md).
DENSE_TOP_K = 256
LEXICAL_TOP_K = 64
CANDIDATE_LIMIT = 128
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

# The tables a context call ranks (retrieval_sql.FACTS, EVENTS, PROCEDURES): their statistics are read together.
RANKED_TABLES = (FACTS, EVENTS, PROCEDURES)


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


STATS_SETTLE_SECONDS = 5.0
# On Citus the version comes from the shards, over a new connection to a worker (20-40 ms on the loaded test machine):
# a process reads it at most this often per project, so processes may weigh words differently for that long after a
# shard's ANALYZE. On one server it is read every call (0).
CITUS_STATS_RECHECK_SECONDS = 10.0
# Projects whose statistics a process keeps at once (each project's name only its own subjects).
TABLE_STATS_MAX_PROJECTS = 256


@dataclass(frozen=True)
class StatsVersion:
    tables: tuple = ()  # per ranked table: (name, row estimate, analyses, indexes)
    settled: bool = field(default=True, compare=False)  # no table analysed within STATS_SETTLE_SECONDS

    def as_dict(self) -> dict:
        """For a call's trace: what the statistics that weighed its words were at."""
        return {
            name: {"rows": rows, "analyses": analyses, "indexes": indexes}
            for name, rows, analyses, indexes in self.tables
        }


@dataclass(frozen=True)
class _HeldStats:
    version: StatsVersion
    tables: dict  # {table: TableStats}
    settled: bool  # read under a settled version: kept until the version changes
    recheck_at: float = 0.0  # time.monotonic() before which the version is not read again (Citus only)
    # (subject, dense_k) WHOLE_SCOPE_SQL found a scope larger than for, though these statistics expected it smaller
    # (written to since the last ANALYZE): such calls go straight to the two phases until the statistics change.
    beyond_whole_scope: set = field(default_factory=set)
    # (subject, candidate limit) whose scope WHOLE_SCOPE_SQL found holding more than the limit, though these statistics
    # expected fewer: a call that ranks in Python asks each table straight away until the statistics change.
    beyond_candidate_limit: set = field(default_factory=set)


_table_stats: dict[str | None, _HeldStats] = {}


def table_stats_version() -> StatsVersion:
    with read_connection().cursor() as cursor:
        cursor.execute(
            CITUS_TABLE_STATS_VERSION_SQL if on_citus() else TABLE_STATS_VERSION_SQL,
            {"tables": list(RANKED_TABLES), "settle": STATS_SETTLE_SECONDS},
        )
        rows = sorted(cursor.fetchall())
    return StatsVersion(
        tuple((name, float(tuples), analyses, indexes) for name, tuples, analyses, _, indexes in rows),
        settled=not any(young for _, _, _, young, _ in rows),
    )


def table_stats_refresh(project_id: str | None = None) -> StatsVersion:
    """Once a call, before any table_stats: the statistics as they are now, read again only when their version
    changed, or once more when it settled. Returns the version the call's statistics are at (for its trace)."""
    held = _table_stats.get(project_id)
    if held is not None and time.monotonic() < held.recheck_at:
        return held.version
    version = table_stats_version()
    recheck_at = time.monotonic() + CITUS_STATS_RECHECK_SECONDS if on_citus() else 0.0
    if held is None or held.version != version or (version.settled and not held.settled):
        if project_id not in _table_stats and len(_table_stats) >= TABLE_STATS_MAX_PROJECTS:
            _table_stats.clear()
        _table_stats[project_id] = _HeldStats(
            version, {name: _read_table_stats(name) for name in RANKED_TABLES}, version.settled, recheck_at
        )
    elif recheck_at:
        _table_stats[project_id] = replace(held, recheck_at=recheck_at)
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
        cursor.execute(
            CITUS_TABLE_STATS_SQL if on_citus() else TABLE_STATS_SQL,
            {"table": table, "scope_graphs": SCOPE_GRAPH_PREFIX + "%"},
        )
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
    return TableStats(
        rows=max(float(reltuples), 0.0),
        term_freq=term_freq,
        subject_freq=subject_freq,
        other_subject_freq=max(other, 0.0),
        scope_graphs=frozenset(graphs),
        rarest_tracked=rarest,
    )


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
        cursor.execute(
            SCOPE_WORDS_SQL,
            {"project_id": project_id, "subject_id": subject_id, "words": list(words), "tables": list(tables)},
        )
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


def text_queries(
    query: str, subject_id: str, table: str = FACTS, counted: ScopeWords | None = None, *, project_id: str | None = None
) -> TextQuery:
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


# The SQL orders by the hybrid score times SQL_SCORE_SCALE, which changes no order (a power of two scales exactly):
# PostgreSQL raises `underflow` where a product of non-zero floats rounds to 0, as a small weight times a recency
# decayed to hakimem.db.DECAY_MIN_EXPONENT did. A non-zero weight goes to SQL as at least 1 (at least 2^-1000 before
# scaling), so no weight times a part in [5e-324, 1] underflows and the score stays far from overflow. The assembler
# scores the candidates again with the weights themselves (scoring.hybrid_score).
SQL_SCORE_SCALE = 2.0**1000


def sql_weight(weight: float) -> float:
    return max(weight, 1.0 / SQL_SCORE_SCALE) * SQL_SCORE_SCALE if weight else 0.0


def _may_have_counts(project_id: str, subject_id: str) -> bool:
    least = settings.HAKI_SCOPE_WORDS_MIN_ITEMS / 2
    return least > 0 and any(table_stats(t, project_id).scope_rows(subject_id) >= least for t in (FACTS, EVENTS))


def lookup_for(
    *,
    project_id: str,
    subject_id: str,
    query: str,
    now: datetime,
    cutoffs: dict,
    config=None,
    candidate_limit: int | None = None,
) -> Lookup:
    version = table_stats_refresh(project_id)
    counted = (
        scope_words_read(project_id, subject_id, lexical_terms(query))
        if _may_have_counts(project_id, subject_id)
        else {}
    )
    return Lookup(
        project_id=project_id,
        subject_id=subject_id,
        now=now,
        cutoffs=cutoffs,
        fact_text=text_queries(query, subject_id, FACTS, counted.get(FACTS), project_id=project_id),
        event_text=text_queries(query, subject_id, EVENTS, counted.get(EVENTS), project_id=project_id),
        procedure_text=text_queries(query, subject_id, PROCEDURES, project_id=project_id),
        config=config,
        candidate_limit=candidate_limit,
        scope_words=counted,
        stats_version=version,
    )


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


def _dense_exact(lookup: Lookup, table: str) -> bool:
    return table_stats(table, lookup.project_id).dense_exact(
        lookup.project_id, lookup.subject_id, project_wide=table == PROCEDURES
    )


def _ranked_rows(
    lookup: Lookup, qvec, table: str, text: TextQuery, graph_sql: str, exact_sql: str, degraded_sql: str
) -> list[dict]:
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


# The statistics choose WHOLE_SCOPE_SQL only for scopes they expect at this share of dense_k: a subject they do not
# know is estimated at the average of the others, so that only a scope grown past dense_k since the last ANALYZE pays
# for a whole-scope statement cut short before its two phases.
WHOLE_SCOPE_MAX_SHARE = 0.5


def whole_scope_expected(lookup: Lookup, dense_k: int) -> bool:
    """Whether the planner's statistics expect the scope to hold few enough facts and events for WHOLE_SCOPE_SQL
    (always, until the tables are first analysed: a new table is small), and no call found it larger since they
    were read."""
    held = _table_stats.get(lookup.project_id)
    if held is not None and (lookup.subject_id, dense_k) in held.beyond_whole_scope:
        return False
    least = dense_k * WHOLE_SCOPE_MAX_SHARE
    return all(table_stats(t, lookup.project_id).scope_rows(lookup.subject_id) <= least for t in (FACTS, EVENTS))


def _found_beyond_whole_scope(lookup: Lookup, dense_k: int) -> None:
    held = _table_stats.get(lookup.project_id)
    if held is not None:
        held.beyond_whole_scope.add((lookup.subject_id, dense_k))


def candidates_together(lookup: Lookup, *, qvec) -> tuple[list[Candidate], list[EpisodeCandidate], bool]:
    """A plain call's candidates, facts and episodes, in one statement: the CANDIDATE_LIMIT best of both by hybrid
    score, from the whole scope when it is small (WHOLE_SCOPE_SQL), else from both tables' two phases (TOGETHER_SQL).
    Only for a call that ranks by the hybrid score alone, with a query vector. The third value: whether the facts
    returned are every active fact of the scope (multi_hop.multi_hop_within may then answer multi-hop)."""
    params = _together_params(lookup, qvec)
    read = _whole_scope(lookup, params)
    if read is not None:
        facts, episodes, scope_facts, _ = read
        # Every active fact of the scope is a candidate, unless some were cut at the candidate limit.
        return facts, episodes, len(facts) == scope_facts
    connection = read_connection()
    with connection.cursor() as cursor:
        facts_exact, events_exact = _dense_exact(lookup, FACTS), _dense_exact(lookup, EVENTS)
        if not (facts_exact and events_exact):
            _settings_for_hnsw(cursor, connection)
        cursor.execute(TOGETHER_SQL[facts_exact, events_exact], params)
        rows = dict_rows(cursor, json_columns=["metadata"])
    return *_facts_and_episodes(rows), False


def whole_scope_candidates(lookup: Lookup, *, qvec) -> tuple[list[Candidate], list[EpisodeCandidate]] | None:
    """For a call that ranks in Python (tiers, category boosts): every active fact and event of a small scope, scored,
    in one statement (WHOLE_SCOPE_SQL), which is what fact_candidates and episode_candidates return for it, without
    their two phases each. None when the scope is not small enough for that (the statistics expect more rows than
    the candidate limit, or the statement found them): the call then asks each table."""
    limit = lookup.candidate_limit or CANDIDATE_LIMIT
    expected = sum(table_stats(t, lookup.project_id).scope_rows(lookup.subject_id) for t in (FACTS, EVENTS))
    held = _table_stats[lookup.project_id]  # what table_stats just read
    if expected > limit or (lookup.subject_id, limit) in held.beyond_candidate_limit:
        return None
    read = _whole_scope(lookup, _together_params(lookup, qvec))
    if read is None:
        return None
    facts, episodes, scope_facts, scope_events = read
    if len(facts) < scope_facts or len(episodes) < scope_events:  # cut at the limit: each table's best would differ
        held.beyond_candidate_limit.add((lookup.subject_id, limit))
        return None
    return facts, episodes


def _together_params(lookup: Lookup, qvec) -> dict:
    params = {**lookup.params(lookup.fact_text), "qvec": vector_literal(qvec)}
    episode_params = lookup.params(lookup.event_text)
    params.update({EPISODE_TEXT_PREFIX + name: episode_params[name] for name in TEXT_PARAMS})
    return params


def _whole_scope(lookup: Lookup, params: dict) -> tuple[list[Candidate], list[EpisodeCandidate], int, int] | None:
    """WHOLE_SCOPE_SQL's facts and episodes, and the scope's active facts and events counted, when the statistics
    expect the scope small and the statement read each table whole; None otherwise."""
    if not whole_scope_expected(lookup, params["dense_k"]):
        return None
    # Prepared: its plan reads the scope by its btree whatever the parameters, and its planning was half its time.
    with read_connection().prepared_cursor() as cursor:
        cursor.execute(WHOLE_SCOPE_SQL, params)
        rows = dict_rows(cursor, json_columns=["metadata"])
    scope_facts, scope_events = (rows[0]["scope_facts"], rows[0]["scope_events"]) if rows else (0, 0)
    if max(scope_facts, scope_events) > params["dense_k"]:  # its pool was cut short: the two phases
        _found_beyond_whole_scope(lookup, params["dense_k"])
        return None
    return *_facts_and_episodes(rows), scope_facts, scope_events


def _facts_and_episodes(rows: list[dict]) -> tuple[list[Candidate], list[EpisodeCandidate]]:
    return (
        [fact_candidate(r) for r in rows if r["item_type"] == "fact"],
        [episode_candidate(r) for r in rows if r["item_type"] == "episode"],
    )


def fact_candidates(lookup: Lookup, *, qvec) -> list[Candidate]:
    rows = _ranked_rows(
        lookup,
        qvec,
        FACTS,
        lookup.fact_text,
        HYBRID_CANDIDATES_SQL,
        HYBRID_EXACT_CANDIDATES_SQL,
        LEXICAL_CANDIDATES_SQL,
    )
    return [fact_candidate(r) for r in rows]


def episode_candidates(lookup: Lookup, *, qvec) -> list[EpisodeCandidate]:
    rows = _ranked_rows(
        lookup, qvec, EVENTS, lookup.event_text, EPISODES_HYBRID_SQL, EPISODES_HYBRID_EXACT_SQL, EPISODES_LEXICAL_SQL
    )
    return [episode_candidate(r) for r in rows]


def next_turns(lookup: Lookup, question_ids: list, sql: str = NEXT_TURNS_SQL, connection=None) -> dict:
    """The event after each of `question_ids` in the scope, by question id (retrieval_sql.next_turns_sql): one
    statement for all of them; a question that is its scope's last event has none."""
    if not question_ids:
        return {}
    with (connection or read_connection()).cursor() as cursor:
        cursor.execute(sql, {**lookup.params(TextQuery()), "ids": [str(i) for i in question_ids]})
        rows = dict_rows(cursor, json_columns=["metadata"])
    return {r["after_id"]: episode_candidate(r) for r in rows}


def procedure_candidates(lookup: Lookup, *, qvec) -> list[ProcedureCandidate]:
    """The subject's and the project's active procedures for the call, at most CANDIDATE_LIMIT, best hybrid score
    first (qvec None: the degraded path's order)."""
    rows = _ranked_rows(
        lookup,
        qvec,
        PROCEDURES,
        lookup.procedure_text,
        PROCEDURES_HYBRID_SQL,
        PROCEDURES_HYBRID_EXACT_SQL,
        PROCEDURES_LEXICAL_SQL,
    )
    return [procedure_candidate(r) for r in rows]


@dataclass(frozen=True)
class ScopeState:
    written: bool  # anything was ever written for the subject (servable or not)
    servable: bool  # it holds a fact or an event a call may serve


def scope_state(lookup: Lookup, sql: str = SCOPE_STATE_SQL) -> ScopeState:
    with read_connection().cursor() as cursor:
        cursor.execute(sql, {"project_id": lookup.project_id, "subject_id": lookup.subject_id, "now": lookup.now})
        servable, written = cursor.fetchone()
    return ScopeState(written=servable or written, servable=servable)


# Query-time contradictions (context/contradictions.py): the candidates compared pairwise, n (n - 1) / 2 distances,
# and the most alike pairs handed to the rules in Python (CONTRADICTION_PAIRS_SQL; their cost: docs/performance.md).
CONTRADICTION_MAX_CANDIDATES = 64
CONTRADICTION_MAX_PAIRS = 256


def similar_pairs(
    *, project_id: str, subject_id: str, ids: list, min_similarity: float, claimed: list[tuple] = ()
) -> list[tuple]:
    """(id, id, similarity) for the CONTRADICTION_MAX_PAIRS most alike pairs of the scope's active facts `ids` at
    least `min_similarity` alike, and the `claimed` pairs (id, id) at any similarity, first, that share no
    conflict set."""
    if len(ids) < 2:
        return []
    with read_connection().cursor() as cursor:
        cursor.execute(
            CONTRADICTION_PAIRS_SQL,
            {
                "project_id": project_id,
                "subject_id": subject_id,
                "ids": [str(i) for i in ids],
                "min_similarity": min_similarity,
                "claimed_a": [str(min(str(a), str(b))) for a, b in claimed],
                "claimed_b": [str(max(str(a), str(b))) for a, b in claimed],
                "max_pairs": CONTRADICTION_MAX_PAIRS,
            },
        )
        return [(a, b, float(similarity)) for a, b, similarity in cursor.fetchall()]
