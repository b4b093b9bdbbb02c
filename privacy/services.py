"""Erasure and consent revocation across the apps, each one function a reader can follow: every app's eraser called
in order, in one transaction, under the scope's writers' lock (facts.locks) and, for a subject, its trace lock
(traces.services.trace_scope_lock). The rows that point at the store's rows go before them: stats' sums of the
traces, the traces, the queued extraction jobs, then the store itself."""

from __future__ import annotations

from django.db import connection, transaction

from facts import consent
from facts.erasure import category_fact_ids, category_facts_erase, facts_erase
from facts.locks import lock_scopes
from facts.models import Consent
from facts.scope_graphs import scope_graph_drop, scope_graph_exists
from hakimem import telemetry
from ingest.services import extraction_jobs_erase
from ingest.writes import write_jobs_erase
from stats.rollup import rollup_erase, rollup_erase_facts
from traces.services import trace_ids_naming, trace_scope_lock, traces_erase, traces_erase_naming


def subject_erase(*, project_id: str, subject_id: str) -> dict[str, int]:
    """Delete every row of the scope, everywhere, in one transaction, and its dedicated hnsw graph; returns the
    count per table (and of graphs dropped), the erasure's receipt.

    The transaction holds the scope's writers' lock (no fact or event of the scope is written meanwhile) and its
    trace lock: a context call's trace either commits before the erasure, which then deletes it, or is written
    after it and names none of the erased rows (traces.services.trace_record).

    The graph goes on its own: its definition holds the subject id, and a DROP INDEX inside the erasure's
    transaction would lock the whole facts table until it commits, so it is dropped CONCURRENTLY, which no
    transaction may hold: first when called outside one (should the erasure then fail, the scope has lost a
    speed-up, not a row); inside one (an API request's, which runs under row security as a role that does not
    own the index), right after it commits, as the connecting user."""
    with telemetry.span("hakimem.subject.erase", project_id=project_id) as span:
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
                    transaction.on_commit(
                        lambda: scope_graph_drop(project_id=project_id, subject_id=subject_id), robust=True
                    )
            trace_scope_lock(project_id=project_id, subject_id=subject_id)
            counts = _erase(project_id, subject_id)
        counts["scope_graphs"] = graphs
        _receipt(span, counts)
    return counts


def _receipt(span, counts: dict[str, int]) -> None:
    """An erasure's receipt on its span: the rows deleted per table, never which."""
    if span.recording:
        span.set(**{f"{telemetry.ERASED_PREFIX}{table}": n for table, n in counts.items()})


@transaction.atomic
def project_erase(*, project_id: str) -> dict[str, int]:
    """Delete every row of every subject of a project, everywhere, in one transaction. For the benchmarks'
    own projects (bench/), which nothing else writes meanwhile: no scope lock, and no API calls it."""
    return _erase(project_id, None)


def _erase(project_id: str, subject_id: str | None) -> dict[str, int]:
    counts = rollup_erase(project_id, subject_id, None)  # the traces' share out of stats' sums, before they go
    counts.update(traces_erase(project_id=project_id, subject_id=subject_id))
    counts.update(extraction_jobs_erase(project_id, subject_id))  # the jobs name the events
    counts.update(write_jobs_erase(project_id, subject_id))  # a pending one holds the scope's texts
    counts.update(facts_erase(project_id=project_id, subject_id=subject_id))
    return counts


def consent_revoke(
    *, project_id: str, subject_id: str, category: str, actor: str, erase: bool = False
) -> tuple[Consent | None, dict[str, int] | None]:
    """Revoke a category from now on (facts.consent.consent_revoke); with `erase`, also delete the category's facts
    and what names them, in the same transaction. Returns the revoked consent (None when there was none and erase
    was asked) and the erasure's receipt (None without erase)."""
    with (
        telemetry.span("hakimem.consent.revoke", project_id=project_id, category_erase=erase) as span,
        transaction.atomic(),
    ):
        current = consent.consent_revoke(
            project_id=project_id, subject_id=subject_id, category=category, actor=actor, missing_ok=erase
        )
        receipt = _category_erase(project_id, subject_id, category) if erase else None
        if receipt is not None:
            _receipt(span, receipt)
    return current, receipt


def _category_erase(project_id: str, subject_id: str, category: str) -> dict[str, int]:
    """The category's facts, the traces whose decisions name them (their rendered text may quote them) with their
    share of stats' sums, and the days stats kept of them; under the scope's writers' lock, which the revocation
    holds, and its trace lock."""
    fact_ids = category_fact_ids(project_id=project_id, subject_id=subject_id, category=category)
    if not fact_ids:
        return category_facts_erase(project_id=project_id, subject_id=subject_id, fact_ids=fact_ids)
    counts = {"facts": 0, "conflict_sets": 0, "conflict_members": 0, "successors_lost": 0, "admin_log_entries": 0}
    trace_scope_lock(project_id=project_id, subject_id=subject_id)
    trace_ids = trace_ids_naming(project_id=project_id, subject_id=subject_id, fact_ids=fact_ids)
    if trace_ids:
        counts.update(rollup_erase(project_id, subject_id, trace_ids))
    counts.update(
        traces_erase_naming(project_id=project_id, subject_id=subject_id, fact_ids=fact_ids, trace_ids=trace_ids)
    )
    counts.update(rollup_erase_facts(project_id, subject_id, fact_ids))
    counts.update(category_facts_erase(project_id=project_id, subject_id=subject_id, fact_ids=fact_ids))
    return counts
