"""Consolidation (manage.py consolidate, and the periodic job of context/tasks.py): applies to the memory store
what query time only decided for one call, and tidies what the calls left behind.

1. contradictions: the pairs context calls left out as superseded_in_context since the project's last run are
   settled under the project's conflict policy (facts.conflicts.contradiction_settle): newest_wins supersedes the
   loser by the winner, as a write of the winner would have; curator proposes the pair to curators. A pair is
   checked again against the facts as they are now (both active, still contradicting by the rules, not already
   in a set together: a curator's dismissal sticks).
2. near-duplicates: in each scope with facts recorded since the last run, active facts at least
   HAKI_DUPLICATE_SIMILARITY alike that pair_verdict calls duplicates are merged
   (facts.writes.fact_merge_duplicates).
3. access counts decayed below ACCESS_MIN_COUNT are deleted (traces.services.item_access_prune).
4. on a run over every project, scopes grown to HAKI_SCOPE_GRAPH_MIN_FACTS active facts get their own hnsw graph
   (facts.scope_graphs.scope_graphs_ensure), built concurrently after the scopes' transactions, and those grown to
   HAKI_SCOPE_TEXT_INDEX_MIN_FACTS their own full-text index (scope_text_indexes_ensure);
5. on the same run, the words of every scope of HAKI_SCOPE_WORDS_MIN_ITEMS active facts or events are counted again
   (facts.scope_words.scope_words_refresh), each scope in a transaction of its own.

Every action is idempotent: a second run over the same window changes nothing. Each scope is consolidated in
its own transaction (its writers' lock held only for it); a dry run rolls each one back, so it reports exactly
what a run would change and writes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from datetime import timezone as dt_timezone

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from context.contradictions import Contradiction
from context.models import ConsolidationMark
from facts.models import Fact
from facts.scope_graphs import scope_graphs_ensure, scope_text_indexes_ensure
from facts.conflicts import contradiction_settle
from facts.scope_words import scope_words_refresh
from facts.writes import fact_merge_duplicates
from facts.text import contradiction_signal
from hakimem.db import with_tables
from traces.models import ReasonCode
from traces.services import item_access_prune

ACTOR = "system:consolidate"

# A trace is dated when its call started and commits a little later; the window starts this much before the
# last run's start, so that a call running across a run's start is read by the next run. Reading a pair twice
# is harmless: every action is idempotent.
CONSOLIDATION_OVERLAP = timedelta(minutes=10)

# The pairs of one project's calls since a time: the losers (decision.fact) and their winners (superseded_by).
# Replays change nothing in the store. The partial index holds only superseded_in_context decisions.
# -- uses: traces_decision_superseded (project_id, trace_id) WHERE reason_code = 'superseded_in_context',
# --       then traces_trace_pkey per decision
SUPERSEDED_PAIRS_SQL = """
SELECT t.subject_id, d.superseded_by, d.fact_id
  FROM traces_decision d JOIN traces_trace t ON t.id = d.trace_id
 WHERE d.project_id = %(project_id)s AND d.reason_code = %(reason)s AND d.superseded_by IS NOT NULL
   AND t.project_id = %(project_id)s AND t.created_at >= %(since)s AND t.replay_of IS NULL
 GROUP BY 1, 2, 3
"""

# The pairs' texts and similarity as the facts are now: the rules decide again (a fact's text may have been
# edited in place since, the rules may have changed).
PAIR_FACTS_SQL = with_tables(
    """
SELECT w.id, l.id, w.text, l.text, 1 - (w.embedding <=> l.embedding)
  FROM unnest(%(winners)s::uuid[], %(losers)s::uuid[]) AS p(winner, loser)
  JOIN {fact} w ON w.id = p.winner AND w.project_id = %(project_id)s AND w.subject_id = %(subject_id)s
  JOIN {fact} l ON l.id = p.loser AND l.project_id = %(project_id)s AND l.subject_id = %(subject_id)s
""",
    fact=Fact,
)

# Projects and their subjects holding facts: a loose scan of facts_fact_scope_status, one probe per scope. Of
# one project, each probe names it (a single-shard statement on a database distributed by project,
# docs/scaling.md); of every project, it walks them all.
_SCOPES_SQL = """
WITH RECURSIVE s AS (
    (SELECT project_id, subject_id FROM facts_fact {first}
      ORDER BY project_id, subject_id LIMIT 1)
    UNION ALL
    SELECT n.project_id, n.subject_id FROM s CROSS JOIN LATERAL (
        SELECT f.project_id, f.subject_id FROM facts_fact f
         WHERE (f.project_id, f.subject_id) > (s.project_id, s.subject_id){next}
         ORDER BY f.project_id, f.subject_id LIMIT 1) n
)
SELECT project_id, subject_id FROM s
"""
SCOPES_SQL = _SCOPES_SQL.format(first="", next="")
PROJECT_SCOPES_SQL = _SCOPES_SQL.format(
    first="WHERE project_id = %(project_id)s", next=" AND f.project_id = %(project_id)s"
)


@dataclass
class ConsolidationReport:
    projects: int = 0
    contradictions_superseded: int = 0  # facts superseded by the winner of a pair (newest_wins)
    contradictions_proposed: int = 0  # pairs proposed to curators (curator)
    contradictions_skipped: int = 0  # pairs read but left alone: a fact gone or inactive, no longer contradicting,
    #                                  already in a set together
    duplicates_merged: int = 0  # facts superseded by a near-duplicate
    item_accesses_deleted: int = 0
    item_accesses_kept: int = 0
    scope_graphs_created: int = 0  # scopes grown past HAKI_SCOPE_GRAPH_MIN_FACTS given their own graph
    scope_text_indexes_created: int = 0  # scopes grown past HAKI_SCOPE_TEXT_INDEX_MIN_FACTS given their own GIN index
    scope_words_counted: int = (
        0  # scopes (their facts; their events) of HAKI_SCOPE_WORDS_MIN_ITEMS whose words were counted
    )
    windows: dict = field(default_factory=dict)  # project -> the start of the window read (None: everything)

    def changes(self) -> int:
        return (
            self.contradictions_superseded
            + self.contradictions_proposed
            + self.duplicates_merged
            + self.item_accesses_deleted
            + self.scope_graphs_created
            + self.scope_text_indexes_created
        )


def _scopes(project_id: str | None) -> dict[str, list[str]]:
    with connection.cursor() as cursor:
        cursor.execute(SCOPES_SQL if project_id is None else PROJECT_SCOPES_SQL, {"project_id": project_id})
        scopes: dict[str, list[str]] = {}
        for project, subject in cursor.fetchall():
            scopes.setdefault(project, []).append(subject)
    return scopes


def _superseded_pairs(project_id: str, since: datetime | None) -> dict[str, list[tuple]]:
    """subject -> [(winner id, loser id)] the project's calls recorded since `since`."""
    with connection.cursor() as cursor:
        cursor.execute(
            SUPERSEDED_PAIRS_SQL,
            {
                "project_id": project_id,
                "reason": ReasonCode.SUPERSEDED_IN_CONTEXT,
                "since": since or datetime.min.replace(tzinfo=dt_timezone.utc),
            },
        )
        pairs: dict[str, list[tuple]] = {}
        for subject, winner, loser in cursor.fetchall():
            pairs.setdefault(subject, []).append((winner, loser))
    return pairs


def _contradictions(project_id: str, subject_id: str, pairs: list[tuple]) -> tuple[list[Contradiction], int]:
    """The pairs that still contradict by the rules, as Contradictions; and how many no longer do (or name a
    fact that is gone)."""
    with connection.cursor() as cursor:
        cursor.execute(
            PAIR_FACTS_SQL,
            {
                "project_id": project_id,
                "subject_id": subject_id,
                "winners": [str(w) for w, _ in pairs],
                "losers": [str(lo) for _, lo in pairs],
            },
        )
        rows = cursor.fetchall()
    found = []
    for winner, loser, winner_text, loser_text, similarity in rows:
        signal = contradiction_signal(winner_text, loser_text)
        if signal is not None:
            found.append(
                Contradiction(
                    winner_id=winner,
                    loser_id=loser,
                    similarity=float(similarity),
                    rule=signal.rule,
                    detail=signal.detail,
                )
            )
    return found, len(pairs) - len(found)


def _window(project_id: str, since: datetime | None) -> datetime | None:
    if since is not None:
        return since
    mark = ConsolidationMark.objects.filter(project_id=project_id).first()
    return mark.consolidated_at - CONSOLIDATION_OVERLAP if mark else None


def consolidate(
    *, project_id: str | None = None, since: datetime | None = None, dry_run: bool = False, now: datetime | None = None
) -> ConsolidationReport:
    """Consolidate one project (or every project with facts) over the window since `since`, by default since
    each project's last run (everything, the first time); returns what changed (what would, with dry_run)."""
    now = now or timezone.now()
    report = ConsolidationReport()
    for project, subjects in _scopes(project_id).items():
        window = _window(project, since)
        report.projects += 1
        report.windows[project] = window
        pairs = _superseded_pairs(project, window)
        for subject in subjects:
            with transaction.atomic():
                found, stale = _contradictions(project, subject, pairs.get(subject, []))
                settled = contradiction_settle(project_id=project, subject_id=subject, pairs=found, actor=ACTOR)
                report.contradictions_superseded += settled.superseded
                report.contradictions_proposed += settled.pairs - settled.superseded
                report.contradictions_skipped += stale + settled.skipped
                report.duplicates_merged += fact_merge_duplicates(
                    project_id=project, subject_id=subject, recorded_since=window
                )
                if dry_run:
                    transaction.set_rollback(True)
        if not dry_run:
            ConsolidationMark.objects.update_or_create(project_id=project, defaults={"consolidated_at": now})
    accesses = item_access_prune(now=now, project_id=project_id, dry_run=dry_run)
    report.item_accesses_deleted = accesses["item_accesses_deleted"]
    report.item_accesses_kept = accesses["item_accesses_kept"]
    if project_id is None and not connection.in_atomic_block:  # CREATE INDEX CONCURRENTLY runs outside one
        report.scope_graphs_created = len(
            scope_graphs_ensure(min_facts=settings.HAKI_SCOPE_GRAPH_MIN_FACTS, dry_run=dry_run)
        )
        report.scope_text_indexes_created = len(
            scope_text_indexes_ensure(min_facts=settings.HAKI_SCOPE_TEXT_INDEX_MIN_FACTS, dry_run=dry_run)
        )
        if not dry_run:  # counts are not a change to the memory: a dry run leaves them as they are
            report.scope_words_counted = scope_words_refresh(min_items=settings.HAKI_SCOPE_WORDS_MIN_ITEMS)
    return report
