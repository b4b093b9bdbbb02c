"""Writes of the memory store. The API and the admin call these and nothing else writes facts.

Every write that touches a scope takes that scope's advisory lock first, so writers of one subject are
serialised: two requests writing the same fact at once produce one row, and conflict detection always
sees the facts committed before it. Embedding happens before the lock (it is the slow part), so a failing
embedder refuses the request before anything is written.
"""
from __future__ import annotations

import logging
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Callable

import numpy as np
from django.conf import settings
from django.contrib.contenttypes.models import ContentType
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone
from psycopg import sql

from facts import extraction, selectors
from facts.models import (
    RESOLVED_BY_MAX,
    SIGNAL_DETAIL_MAX,
    ConflictMember,
    ConflictPolicy,
    ConflictSet,
    ConflictStatus,
    Consent,
    ConsentWritePolicy,
    Event,
    ExtractionStatus,
    IDENTITY_BLOCKS_PER_SCOPE,
    Fact,
    FactKind,
    FactStatus,
    IdentityBlock,
    Procedure,
    ProcedureStatus,
    Project,
    ScopeWordCounts,
    Volatility,
)
from facts.scope_graphs import SCOPE_ITEMS, large_scopes, scope_graph_drop, scope_graph_exists
from facts.text import Signal, Statement, adds_information, analyse, contradiction_signal, text_hash
from hakimem.embeddings import get_embedder, is_degenerate

logger = logging.getLogger("hakimem.facts")

MAX_BATCH = 500


class ServiceValidationError(Exception):
    """Input that passed the serializer but not the store's rules; `errors` lists {index, field, message}."""

    def __init__(self, errors: list[dict]):
        super().__init__("; ".join(e["message"] for e in errors))
        self.errors = errors


class ConflictNotOpen(Exception):
    pass


class ConsentMissing(ServiceValidationError):
    """Facts of a category their subject has not consented to, in a project that refuses such writes."""


class ConsentNotFound(Exception):
    pass


@dataclass
class FactInput:
    project_id: str
    subject_id: str
    text: str
    category: str = ""
    kind: str = FactKind.FACT
    importance: float = 0.5
    volatility: str = Volatility.PERMANENT
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    source_event_id: object = None
    metadata: dict = field(default_factory=dict)


@dataclass
class FactWriteResult:
    fact: Fact
    deduplicated: bool = False
    conflict_set: ConflictSet | None = None


def _lock_scopes(scopes) -> None:
    with connection.cursor() as cursor:
        for project_id, subject_id in sorted(set(scopes)):
            cursor.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s || chr(31) || %s, 0))", [project_id, subject_id]
            )


def _by_project(ids_by_project: dict) -> Q:
    """Rows by id, each with its project: every lookup of the store names the project of the rows it reads, what
    a database distributed by project routes on (docs/scaling.md)."""
    condition = Q(pk__in=[])
    for project_id, ids in ids_by_project.items():
        condition |= Q(project_id=project_id, id__in=list(ids))
    return condition


def _of_facts(facts) -> Q:
    ids_by_project = defaultdict(list)
    for fact in facts:
        ids_by_project[fact.project_id].append(fact.id)
    return _by_project(ids_by_project)


def _check_source_events(items: list[FactInput]) -> None:
    wanted = {i: item for i, item in enumerate(items) if item.source_event_id}
    if not wanted:
        return
    by_project = defaultdict(set)
    for it in wanted.values():
        by_project[it.project_id].add(str(it.source_event_id))
    found = {
        (str(e.id), e.project_id, e.subject_id)
        for e in Event.objects.filter(_by_project(by_project)).only("id", "project_id", "subject_id")
    }
    errors = [
        {"index": i, "field": "source_event_id", "message": "no event with this id in the fact's scope"}
        for i, it in wanted.items()
        if (str(it.source_event_id), it.project_id, it.subject_id) not in found
    ]
    if errors:
        raise ServiceValidationError(errors)


def fact_create_batch(*, items: list[FactInput], actor: str, exclude_ids=()) -> list[FactWriteResult]:
    """Store facts all-or-nothing, de-duplicating and detecting conflicts against the scope and within
    the batch. Returns one result per item, in order."""
    if not 1 <= len(items) <= MAX_BATCH:
        raise ServiceValidationError([{"index": None, "field": "facts", "message": f"send 1 to {MAX_BATCH} facts"}])
    _check_source_events(items)
    vectors = get_embedder().embed([item.text for item in items])
    with transaction.atomic():
        _lock_scopes((item.project_id, item.subject_id) for item in items)
        return _store_facts(items, vectors, actor=actor, exclude_ids=list(exclude_ids))


def fact_create(*, actor: str, **fields) -> FactWriteResult:
    return fact_create_batch(items=[FactInput(**fields)], actor=actor)[0]


CONFLICT, DUPLICATE, DISTINCT = "conflict", "duplicate", "distinct"


def pair_verdict(new_text: str | Statement, old_text: str | Statement, similarity: float) -> tuple[str, Signal | None]:
    """How a new fact relates to a stored one of the same scope:
    - conflict: their claims give one holder two values of one attribute (facts.claims), at any similarity
      from HAKI_CLAIM_MIN_SIMILARITY up; or similar enough to be about the same thing
      (>= HAKI_CONFLICT_MIN_SIMILARITY) and a word rule fires;
    - duplicate: no contradiction, >= HAKI_DUPLICATE_SIMILARITY, and the new text names nothing new;
    - distinct: anything else (stored as its own fact)."""
    if not similarity >= settings.HAKI_CLAIM_MIN_SIMILARITY:  # NaN too: a vector cosine cannot rank
        return DISTINCT, None
    signal = contradiction_signal(new_text, old_text)
    if signal is not None and (signal.read_as_claims or similarity >= settings.HAKI_CONFLICT_MIN_SIMILARITY):
        return CONFLICT, signal
    if similarity < settings.HAKI_CONFLICT_MIN_SIMILARITY:
        return DISTINCT, None
    if similarity >= settings.HAKI_DUPLICATE_SIMILARITY and not adds_information(new_text, old_text):
        return DUPLICATE, None
    return DISTINCT, None


Scope = tuple[str, str]  # (project_id, subject_id)
Candidate = tuple[object, str, float]  # (fact id, text, similarity)


def _check_categories(items: list[FactInput]) -> dict[str, selectors.ProjectSettings]:
    """A project's category list and consent rules, checked under the scopes' locks (a revocation takes them
    too, so no write slips in between a revocation and its erasure): a category outside the project's list
    is refused; with consent required, a fact needs a category, and under the `refuse` write policy one its
    subject consents to now."""
    projects = {p: selectors.project_settings(p) for p in {i.project_id for i in items}}
    gated = [i for i in items if projects[i.project_id].consent_required]
    consents = selectors.consented_categories((i.project_id, i.subject_id) for i in gated) if gated else {}
    errors, missing = [], []
    for n, item in enumerate(items):
        project = projects[item.project_id]
        if project.categories and item.category not in project.categories:
            errors.append({"index": n, "field": "category",
                           "message": f"not one of the project's categories ({', '.join(project.categories)})"})
        elif project.consent_required and not item.category:
            errors.append({"index": n, "field": "category",
                           "message": "required: this project serves facts by the categories its subjects consent to"})
        elif (project.consent_required and project.consent_write_policy == ConsentWritePolicy.REFUSE
              and item.category not in consents[(item.project_id, item.subject_id)]):
            missing.append({"index": n, "field": "category",
                            "message": f"the subject has not consented to the category {item.category!r}"})
    if errors:
        raise ServiceValidationError(errors)
    if missing:
        raise ConsentMissing(missing)
    return projects


def _store_facts(items, vectors, *, actor: str, exclude_ids: list) -> list[FactWriteResult]:
    """Check the projects' category and consent rules, look up what the scopes already hold, classify each
    item against it and against the batch's earlier items, then write: the new facts, the re-confirmations,
    the conflict sets."""
    projects = _check_categories(items)
    now = timezone.now()
    batch = _Batch.of(items, vectors)
    plan = _classify(batch, _lookup_stored(batch, exclude_ids=exclude_ids), now=now)
    return _persist(plan, actor=actor, now=now, projects=projects)


@dataclass(frozen=True)
class _Batch:
    items: list[FactInput]
    vectors: np.ndarray
    hashes: list[str]
    by_scope: dict[Scope, list[int]]  # item indexes per scope, in item order

    @classmethod
    def of(cls, items: list[FactInput], vectors: np.ndarray) -> _Batch:
        by_scope: dict[Scope, list[int]] = defaultdict(list)
        for i, item in enumerate(items):
            by_scope[(item.project_id, item.subject_id)].append(i)
        return cls(items, vectors, [text_hash(item.text) for item in items], dict(by_scope))


# --- lookup: what the scopes already hold -----------------------------------------------------------------

@dataclass
class _Stored:
    by_hash: dict[tuple, Fact]  # (project_id, subject_id, text_hash) -> the scope's active fact with that text
    neighbours: dict[int, list[Candidate]]  # item index -> nearest active facts (items without a same-text fact)


def _lookup_stored(batch: _Batch, *, exclude_ids: list) -> _Stored:
    """Per scope, one query for the active facts with an item's text, then one k-NN probe for the neighbours of
    all the other items."""
    hashes, vectors = batch.hashes, batch.vectors
    stored = _Stored(by_hash={}, neighbours={})
    for (project_id, subject_id), indexes in batch.by_scope.items():
        for fact in Fact.objects.filter(
            project_id=project_id, subject_id=subject_id, status=FactStatus.ACTIVE,
            text_hash__in={hashes[i] for i in indexes},
        ).exclude(id__in=exclude_ids).defer("embedding", "search_vector"):
            stored.by_hash[(project_id, subject_id, fact.text_hash)] = fact
        probe = [i for i in indexes if (project_id, subject_id, hashes[i]) not in stored.by_hash]
        # A vector cosine cannot rank by (all zeros, NaN) has no neighbours: its distances are NaN, and a NaN
        # similarity passes no threshold test the way a number would. Exact repeats were found above by text.
        usable = [i for i in probe if not is_degenerate(vectors[i])]
        if len(usable) < len(probe):
            logger.warning("facts: %d item(s) with a degenerate vector, compared by text only", len(probe) - len(usable))
            probe = usable
        found = selectors.fact_neighbours(
            project_id=project_id, subject_id=subject_id, vectors=[vectors[i] for i in probe], exclude_ids=exclude_ids
        )
        stored.neighbours.update(zip(probe, found))
    return stored


# --- classify: duplicate, conflict or distinct, item by item ----------------------------------------------

@dataclass
class _NewFact:
    fact: Fact
    conflicts: list[tuple[object, float, Signal]] = field(default_factory=list)  # (fact id, similarity, signal)


@dataclass
class _Plan:
    """The batch classified. `results[i]` is None for an item answered by a fact that `duplicate_of[i]` names
    (one stored, or one of `new`), filled in once the new facts are written."""
    results: list[FactWriteResult | None]
    projects: set[str] = field(default_factory=set)  # the batch's
    new: list[_NewFact] = field(default_factory=list)  # in item order
    duplicate_of: dict[int, object] = field(default_factory=dict)
    reconfirm: dict[object, Fact] = field(default_factory=dict)  # stored facts an item repeats


# A new fact is compared with at most this many of the batch's earlier facts, the most similar ones above the
# conflict threshold, as with the facts already stored (NEIGHBOURS_PER_FACT nearest). Compared with all of them,
# a batch of similar texts cost a pair of rule checks per pair of items: 200 facts of 7k characters held the
# subject's write lock 172 s (scripts/bench_batch.py).
BATCH_NEIGHBOURS = selectors.NEIGHBOURS_PER_FACT


class _EarlierFacts:
    """The new facts classified so far, per scope, and the similarity of every pair of the batch's items in a
    scope: one matrix product per scope instead of one dot product per pair."""

    def __init__(self, vectors: np.ndarray, by_scope: dict[Scope, list[int]]):
        self.similarity: dict[Scope, np.ndarray] = {}
        self.rows: dict[Scope, np.ndarray] = {}  # rows of the scope's new facts, in item order (the first `len(facts)`)
        self.facts: dict[Scope, list[Fact]] = {}
        for scope, indexes in by_scope.items():
            block = vectors[indexes]
            self.similarity[scope] = block @ block.T
            self.rows[scope] = np.empty(len(indexes), dtype=np.intp)
            self.facts[scope] = []
        self.row = {i: row for indexes in by_scope.values() for row, i in enumerate(indexes)}  # item -> its row

    def add(self, scope: Scope, i: int, fact: Fact) -> None:
        facts = self.facts[scope]
        self.rows[scope][len(facts)] = self.row[i]
        facts.append(fact)

    def similar(self, scope: Scope, i: int, min_similarity: float) -> list[Candidate]:
        """The scope's new facts at least `min_similarity` similar to item i, at most the BATCH_NEIGHBOURS most
        similar, in the order they were added."""
        facts = self.facts[scope]
        if not facts:
            return []
        similarities = self.similarity[scope][self.row[i], self.rows[scope][: len(facts)]]
        above = np.flatnonzero(similarities >= min_similarity)
        if len(above) > BATCH_NEIGHBOURS:
            above = np.sort(above[np.argpartition(-similarities[above], BATCH_NEIGHBOURS - 1)[:BATCH_NEIGHBOURS]])
        return [(facts[k].id, facts[k].text, float(similarities[k])) for k in above]


class _Statements:
    """Each text of a batch analysed once for the contradiction rules (facts.text.analyse), however many texts
    it is compared with; held for the batch only."""

    def __init__(self):
        self._by_text: dict[str, Statement] = {}

    def __call__(self, text: str) -> Statement:
        statement = self._by_text.get(text)
        if statement is None:
            statement = self._by_text[text] = analyse(text)
        return statement


def _compare(text: str, candidates: list[Candidate], statements: _Statements) -> tuple[list, object | None]:
    """The facts `text` contradicts as (id, similarity, signal); when it contradicts none, the id of the most
    similar fact it duplicates, if any."""
    conflicts, near_duplicates = [], []
    if not candidates:
        return [], None
    statement = statements(text)
    for fact_id, other, similarity in candidates:
        verdict, signal = pair_verdict(statement, statements(other), similarity)
        if verdict == CONFLICT:
            conflicts.append((fact_id, similarity, signal))
        elif verdict == DUPLICATE:
            near_duplicates.append((similarity, fact_id))
    if near_duplicates and not conflicts:
        return [], max(near_duplicates, key=lambda pair: pair[0])[1]
    return conflicts, None


def _classify(batch: _Batch, stored: _Stored, *, now) -> _Plan:
    """In item order: an item with a stored fact's text repeats it; one with an earlier item's text, or that
    duplicates a stored or earlier fact without contradicting any, is answered by that fact; any other is a
    new fact, with the stored and earlier facts it contradicts."""
    min_similarity = min(settings.HAKI_CLAIM_MIN_SIMILARITY, settings.HAKI_CONFLICT_MIN_SIMILARITY)
    plan = _Plan(results=[None] * len(batch.items), projects={item.project_id for item in batch.items})
    earlier = _EarlierFacts(batch.vectors, batch.by_scope)
    statements = _Statements()
    new_by_hash: dict[tuple, Fact] = {}
    for i, item in enumerate(batch.items):
        scope = (item.project_id, item.subject_id)
        key = (*scope, batch.hashes[i])
        if key in stored.by_hash:
            fact = stored.by_hash[key]
            plan.reconfirm[fact.id] = fact
            plan.results[i] = FactWriteResult(fact=fact, deduplicated=True)
            continue
        if key in new_by_hash:
            plan.duplicate_of[i] = new_by_hash[key].id
            continue
        candidates = [c for c in stored.neighbours.get(i, []) if c[2] >= min_similarity]
        conflicts, duplicate_of = _compare(item.text, candidates + earlier.similar(scope, i, min_similarity), statements)
        if duplicate_of is not None:
            plan.duplicate_of[i] = duplicate_of
            continue
        fact = _new_fact(item, batch.hashes[i], batch.vectors[i], now=now)
        plan.new.append(_NewFact(fact=fact, conflicts=conflicts))
        earlier.add(scope, i, fact)
        new_by_hash[key] = fact
        plan.results[i] = FactWriteResult(fact=fact)
    return plan


def _new_fact(item: FactInput, digest: str, vector, *, now) -> Fact:
    return Fact(
        project_id=item.project_id, subject_id=item.subject_id, text=item.text, text_hash=digest,
        embedding=vector, category=item.category, kind=item.kind, importance=item.importance,
        volatility=item.volatility, valid_from=item.valid_from, valid_to=item.valid_to,
        recorded_from=now, last_confirmed_at=now, source_event_id=item.source_event_id, metadata=item.metadata,
    )


# --- persist ----------------------------------------------------------------------------------------------

def _persist(plan: _Plan, *, actor: str, now, projects: dict[str, selectors.ProjectSettings]) -> list[FactWriteResult]:
    Fact.objects.bulk_create([n.fact for n in plan.new])
    _answer_duplicates(plan)
    if plan.reconfirm:
        Fact.objects.filter(_of_facts(plan.reconfirm.values())).update(last_confirmed_at=now)
        for fact in plan.reconfirm.values():
            fact.last_confirmed_at = now
    # A new fact's conflict set is reported by its own result and by each item it answers as a duplicate.
    results_of: dict[object, list[FactWriteResult]] = defaultdict(list)
    for result in plan.results:
        results_of[result.fact.id].append(result)
    for new in plan.new:
        if new.conflicts:
            policy = projects[new.fact.project_id].conflict_policy
            conflict_set = _record_conflict(new.fact, new.conflicts, actor=actor, now=now, policy=policy)
            for result in results_of[new.fact.id]:
                result.conflict_set = conflict_set
    return plan.results


def _answer_duplicates(plan: _Plan) -> None:
    """Near-duplicates of facts already stored or just stored: the stored one answers, re-confirmed."""
    new_by_id = {n.fact.id: n.fact for n in plan.new}
    missing = {fact_id for fact_id in plan.duplicate_of.values() if fact_id not in new_by_id}
    stored = {f.id: f for f in Fact.objects.filter(project_id__in=plan.projects, id__in=missing)
              .defer("embedding", "search_vector")} if missing else {}
    for i, fact_id in plan.duplicate_of.items():
        fact = new_by_id.get(fact_id) or stored[fact_id]
        if fact.id not in new_by_id:
            plan.reconfirm[fact.id] = fact
        plan.results[i] = FactWriteResult(fact=fact, deduplicated=True)


def _record_conflict(fact: Fact, conflicts, *, actor: str, now, policy: str) -> ConflictSet:
    """Open (or join) a conflict set for `fact` and the facts it contradicts; under the newest_wins policy,
    supersede the older ones at once and record the set as resolved by the system."""
    other_ids = [fid for fid, _, _ in conflicts]
    fid, similarity, signal = max(conflicts, key=lambda c: c[1])
    if policy == ConflictPolicy.NEWEST_WINS:
        conflict_set = ConflictSet.objects.create(
            project_id=fact.project_id, subject_id=fact.subject_id, status=ConflictStatus.RESOLVED,
            signal=signal.rule, signal_detail=signal.detail[:SIGNAL_DETAIL_MAX], reading=signal.reading or {},
            similarity=similarity, opened_at=now, resolved_at=now, resolved_by="system:newest_wins", note="Newest fact kept by the project's conflict policy.",
        )
        ConflictMember.objects.bulk_create(
            [ConflictMember(project_id=fact.project_id, conflict_set=conflict_set, fact=fact, added_at=now, kept=True)]
            + [ConflictMember(project_id=fact.project_id, conflict_set=conflict_set, fact_id=o, added_at=now, kept=False)
               for o in other_ids]
        )
        _supersede(other_ids, by=fact.id, now=now, project_id=fact.project_id)
        return conflict_set

    # Pairwise membership: the new fact joins each open set holding a fact it contradicts (by a rule, above
    # the similarity threshold), and the facts it contradicts that are in no open set join it there. Sets are
    # never merged through a fact that bridges them: a set then holds only facts that each contradict one
    # of its members, not every fact one similar sentence led to (merged sets grew to 28 members on
    # average on LoCoMo's chats, each blocking all of them).
    open_sets = list(
        ConflictSet.objects.select_for_update()
        .filter(project_id=fact.project_id, status=ConflictStatus.OPEN,
                id__in=ConflictMember.objects.filter(project_id=fact.project_id, fact_id__in=other_ids)
                .values("conflict_set_id"))
        .order_by("opened_at", "id")
    )
    in_open_sets = set(
        ConflictMember.objects.filter(project_id=fact.project_id, conflict_set__in=open_sets, fact_id__in=other_ids)
        .values_list("fact_id", flat=True)
    )
    loose = [f for f in other_ids if f not in in_open_sets]
    if not open_sets:
        open_sets = [ConflictSet.objects.create(
            project_id=fact.project_id, subject_id=fact.subject_id, signal=signal.rule,
            signal_detail=signal.detail[:SIGNAL_DETAIL_MAX], reading=signal.reading or {}, similarity=similarity,
            opened_at=now,
        )]
    members = [ConflictMember(project_id=fact.project_id, conflict_set=s, fact=fact, added_at=now) for s in open_sets]
    members += [ConflictMember(project_id=fact.project_id, conflict_set=open_sets[0], fact_id=f, added_at=now)
                for f in loose]
    ConflictMember.objects.bulk_create(members)
    logger.info("conflict set %s: %s (similarity %.3f)", open_sets[0].id, signal.rule, similarity)
    return open_sets[0]


# --- contradictions found at query time ------------------------------------------------------------------

def _pairs_to_record(project_id: str, subject_id: str, pairs) -> dict[uuid.UUID, list[tuple]]:
    """The pairs still worth recording, by winner: both facts active in the scope, and not already sharing a
    conflict set (open: already proposed; closed with both active: a curator dismissed it or kept both, and that
    stands). One (winner, loser) once, its most similar sighting."""
    best: dict[tuple, object] = {}
    for pair in pairs:
        key = (uuid.UUID(str(pair.winner_id)), uuid.UUID(str(pair.loser_id)))
        if key[0] != key[1] and (key not in best or pair.similarity > best[key].similarity):
            best[key] = pair
    active = set(Fact.objects.filter(id__in={i for key in best for i in key}, project_id=project_id,
                                     subject_id=subject_id, status=FactStatus.ACTIVE).values_list("id", flat=True))
    sets_of: dict[uuid.UUID, set] = defaultdict(set)
    members = ConflictMember.objects.filter(project_id=project_id, fact_id__in=active)
    for set_id, fact_id in members.values_list("conflict_set_id", "fact_id"):
        sets_of[fact_id].add(set_id)
    by_winner: dict[uuid.UUID, list[tuple]] = defaultdict(list)
    for (winner, loser), pair in best.items():
        if winner in active and loser in active and not (sets_of[winner] & sets_of[loser]):
            by_winner[winner].append((loser, pair.similarity, Signal(pair.rule, pair.detail)))
    return by_winner


@dataclass
class ContradictionsRecorded:
    """What recording a call's (or a consolidation's) contradicting pairs did."""

    sets: list[ConflictSet] = field(default_factory=list)  # opened or joined (curator), resolved (newest_wins)
    pairs: int = 0  # pairs recorded
    superseded: int = 0  # facts superseded (newest_wins)
    skipped: int = 0  # distinct pairs left alone: a fact no longer active, or the pair already shares a set


def _record_contradictions(*, project_id: str, subject_id: str, pairs, actor: str, policy: str) -> ContradictionsRecorded:
    """Each winner's pairs through the write path's _record_conflict, as if the winner had just been written:
    under curator, opened or joined sets; under newest_wins, its losers superseded and a set recorded as resolved
    by the system. Winners newest first, a fact superseded on the way superseding nothing more: with C over B and
    B over A, A stays (as context.contradictions decides within a call)."""
    now = timezone.now()
    distinct = {(str(p.winner_id), str(p.loser_id)) for p in pairs if str(p.winner_id) != str(p.loser_id)}
    by_winner = _pairs_to_record(project_id, subject_id, pairs)
    winners = sorted(Fact.objects.filter(project_id=project_id, id__in=list(by_winner)).defer("embedding", "search_vector"),
                     key=lambda f: (f.valid_from or f.recorded_from, f.recorded_from, str(f.id)), reverse=True)
    gone: set[uuid.UUID] = set()
    done = ContradictionsRecorded()
    for winner in winners:
        conflicts = [c for c in by_winner[winner.id] if c[0] not in gone]
        if winner.id in gone or not conflicts:
            continue
        conflict_set = _record_conflict(winner, conflicts, actor=actor, now=now, policy=policy)
        if conflict_set not in done.sets:
            done.sets.append(conflict_set)
        done.pairs += len(conflicts)
        if policy == ConflictPolicy.NEWEST_WINS:
            gone.update(c[0] for c in conflicts)
            done.superseded += len(conflicts)
    done.skipped = len(distinct) - done.pairs
    return done


def _try_lock_scope(project_id: str, subject_id: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(hashtextextended(%s || chr(31) || %s, 0))",
                       [project_id, subject_id])
        return cursor.fetchone()[0]


def contradiction_propose(*, project_id: str, subject_id: str, pairs, actor: str, wait: bool = True) -> list[ConflictSet]:
    """Propose to curators the contradicting pairs a context call found among its candidates: under the project's
    curator policy, each pair opens or joins a conflict set exactly as a write of its winner would
    (_record_conflict). `pairs`: objects with winner_id, loser_id, similarity, rule and detail
    (context.contradictions.Contradiction). Idempotent: a pair whose facts already share a set (open, or closed
    by a curator with both kept or dismissed) or of which a fact is no longer active is left alone, so a
    curator's dismissal sticks. Under newest_wins nothing is proposed (consolidation supersedes the loser).

    Under the scope's writers' lock, as every write of the scope. wait=False (a context call, which must not
    queue behind a batch of fact writes): when a writer holds it, nothing is proposed now and [] is returned;
    manage.py consolidate proposes the pair later from the call's trace. Returns the sets opened or joined."""
    if not pairs or selectors.project_settings(project_id).conflict_policy != ConflictPolicy.CURATOR:
        return []
    with transaction.atomic():
        if wait:
            _lock_scopes([(project_id, subject_id)])
        elif not _try_lock_scope(project_id, subject_id):
            return []
        return _record_contradictions(project_id=project_id, subject_id=subject_id, pairs=pairs, actor=actor,
                                      policy=ConflictPolicy.CURATOR).sets


def contradiction_settle(*, project_id: str, subject_id: str, pairs, actor: str) -> ContradictionsRecorded:
    """What consolidation does with the pairs query time decided for one call each: under newest_wins, the
    loser is superseded by the winner, recorded as the write path records that policy (a conflict set resolved
    by the system); under curator, the pair is proposed (contradiction_propose). Same pairs and same idempotence
    as contradiction_propose."""
    if not pairs:
        return ContradictionsRecorded()
    policy = selectors.project_settings(project_id).conflict_policy
    with transaction.atomic():
        _lock_scopes([(project_id, subject_id)])
        return _record_contradictions(project_id=project_id, subject_id=subject_id, pairs=pairs, actor=actor,
                                      policy=policy)


# --- consolidation: near-duplicates merged ------------------------------------------------------------------

def fact_merge_duplicates(*, project_id: str, subject_id: str, recorded_since: datetime | None = None) -> int:
    """Merge the scope's active near-duplicates with a fact recorded since `recorded_since` (None: all), as the
    write path would have had the newer come after the older was stored: a newer fact that pair_verdict calls a
    duplicate of an older one (at least HAKI_DUPLICATE_SIMILARITY alike, no contradiction, names nothing the
    older does not) is answered by the older, which it re-confirms (the later last_confirmed_at), and is
    superseded by it. A newer fact that adds something stays, as at write time. Two such facts get stored when a
    write's neighbour probe missed the other, before a threshold changed, or by an import. Pairs come from
    facts.selectors.fact_near_duplicates, most alike first; a pair with a member in an open conflict set is left
    to the curator. Under the scope's writers' lock. Returns the number of facts superseded."""
    with transaction.atomic():
        _lock_scopes([(project_id, subject_id)])
        pairs = selectors.fact_near_duplicates(project_id=project_id, subject_id=subject_id,
                                               recorded_since=recorded_since,
                                               min_similarity=settings.HAKI_DUPLICATE_SIMILARITY)
        if not pairs:
            return 0
        ids = {i for a, b, _ in pairs for i in (a, b)}
        facts = {f.id: f for f in Fact.objects.filter(project_id=project_id, id__in=ids, status=FactStatus.ACTIVE)
                 .exclude(selectors.in_open_conflict_q()).only("id", "text", "recorded_from", "last_confirmed_at")}
        statements = _Statements()
        now = timezone.now()
        merged = 0
        for a, b, similarity in sorted(pairs, key=lambda p: (-p[2], str(p[0]), str(p[1]))):
            if a not in facts or b not in facts:  # superseded earlier in this run, or blocked
                continue
            older, newer = sorted((facts[a], facts[b]), key=lambda f: (f.recorded_from, str(f.id)))  # write order
            if pair_verdict(statements(newer.text), statements(older.text), similarity)[0] != DUPLICATE:
                continue
            if newer.last_confirmed_at > older.last_confirmed_at:
                Fact.objects.filter(project_id=project_id, id=older.id).update(last_confirmed_at=newer.last_confirmed_at)
                older.last_confirmed_at = newer.last_confirmed_at
            merged += _supersede([newer.id], by=older.id, now=now, project_id=project_id)
            del facts[newer.id]
        return merged


def _supersede(fact_ids, *, by, now, project_id: str) -> int:
    return Fact.objects.filter(project_id=project_id, id__in=list(fact_ids), status=FactStatus.ACTIVE).update(
        status=FactStatus.SUPERSEDED, recorded_to=now, superseded_by_id=by
    )


IN_PLACE_FIELDS = ("category", "importance", "volatility", "valid_to", "metadata")


def fact_update(*, fact: Fact, changes: dict, actor: str) -> FactWriteResult:
    """PATCH. A new text is a new version: a new fact in the same scope supersedes this one (other fields
    carried over unless changed). Without a text change, the listed fields are edited in place."""
    if fact.status != FactStatus.ACTIVE:
        raise ServiceValidationError([{"index": None, "field": "status", "message": f"the fact is {fact.status}; only active facts can be edited"}])
    new_text = changes.get("text")
    if new_text is None or text_hash(new_text) == fact.text_hash:
        with transaction.atomic():
            _lock_scopes([(fact.project_id, fact.subject_id)])
            fact = Fact.objects.select_for_update().get(id=fact.id, project_id=fact.project_id)
            if fact.status != FactStatus.ACTIVE:
                raise ServiceValidationError([{"index": None, "field": "status", "message": f"the fact is {fact.status}"}])
            if "category" in changes:
                _check_categories([FactInput(project_id=fact.project_id, subject_id=fact.subject_id, text=fact.text,
                                             category=changes["category"])])
            fields = [name for name in IN_PLACE_FIELDS if name in changes]
            for name in fields:
                setattr(fact, name, changes[name])
            if new_text is not None and new_text != fact.text:  # same normalised text: a cosmetic edit
                fact.text = new_text
                fact.embedding = get_embedder().embed([new_text])[0]
                fields += ["text", "embedding"]
            if fields:
                fact.full_clean(exclude=["embedding", "superseded_by", "source_event"])
                fact.save(update_fields=fields)
            return FactWriteResult(fact=fact)

    carried = {
        "category": fact.category, "kind": fact.kind, "importance": fact.importance, "volatility": fact.volatility,
        "valid_from": fact.valid_from, "valid_to": fact.valid_to, "source_event_id": fact.source_event_id,
        "metadata": fact.metadata,
    }
    carried.update({k: v for k, v in changes.items() if k in carried})
    item = FactInput(project_id=fact.project_id, subject_id=fact.subject_id, text=new_text, **carried)
    vector = get_embedder().embed([new_text])
    with transaction.atomic():
        _lock_scopes([(fact.project_id, fact.subject_id)])
        old = Fact.objects.select_for_update().get(id=fact.id, project_id=fact.project_id)
        if old.status != FactStatus.ACTIVE:
            raise ServiceValidationError([{"index": None, "field": "status", "message": f"the fact is {old.status}"}])
        result = _store_facts([item], vector, actor=actor, exclude_ids=[old.id])[0]
        _supersede([old.id], by=result.fact.id, now=timezone.now(), project_id=old.project_id)
        return result


def fact_retract(*, fact: Fact) -> Fact:
    """Retracted facts are never served again. Retracting twice is harmless. Raises Fact.DoesNotExist when the
    fact's subject was erased meanwhile.

    Under the scope's writers' lock, which erasure holds too: a caller that records something about the fact in
    the same transaction (the admin's log entry) has it committed before an erasure starts, which then deletes
    it, or finds the fact gone."""
    with transaction.atomic():
        _lock_scopes([(fact.project_id, fact.subject_id)])
        fact = Fact.objects.select_for_update().get(id=fact.id, project_id=fact.project_id)
        if fact.status != FactStatus.RETRACTED:
            fact.status = FactStatus.RETRACTED
            fact.recorded_to = fact.recorded_to or timezone.now()
            fact.save(update_fields=["status", "recorded_to"])
    return fact


@dataclass
class EventInput:
    project_id: str
    subject_id: str
    text: str
    occurred_at: datetime
    metadata: dict = field(default_factory=dict)


def event_create_batch(*, items: list[EventInput]) -> list[Event]:
    if not 1 <= len(items) <= MAX_BATCH:
        raise ServiceValidationError([{"index": None, "field": "events", "message": f"send 1 to {MAX_BATCH} events"}])
    vectors = get_embedder().embed([item.text for item in items])
    extract = extraction.enabled()
    events = [
        Event(project_id=i.project_id, subject_id=i.subject_id, text=i.text, occurred_at=i.occurred_at,
              embedding=v, metadata=i.metadata, extraction_status=ExtractionStatus.PENDING if extract else "")
        for i, v in zip(items, vectors)
    ]
    with transaction.atomic():
        # The scope's writers' lock, as facts take it: an erasure of the subject either deletes these events (they
        # were committed before it began) or is over before they are stored.
        _lock_scopes((e.project_id, e.subject_id) for e in events)
        Event.objects.bulk_create(events)
        if extract:
            _queue_extraction(events)
    return events


def _queue_extraction(events: list[Event]) -> None:
    """Queue the events' extraction in their own transaction: committed together or not at all. The queue
    failing (its tables missing, say) never fails the events' write: they are stored as failed, enqueue_failed."""
    from facts.tasks import extract_event  # procrastinate's app is ready only once Django is

    try:
        with transaction.atomic():
            extract_event.batch_defer(*({"event_id": str(e.id)} for e in events))
    except Exception:
        logger.exception("extraction: %d event(s) could not be queued", len(events))
        Event.objects.filter(id__in=[e.id for e in events]).update(
            extraction_status=ExtractionStatus.FAILED, extraction_error="enqueue_failed")
        for event in events:
            event.extraction_status, event.extraction_error = ExtractionStatus.FAILED, "enqueue_failed"


def conflict_resolve(
    *, conflict_set: ConflictSet, actor: str, keep: list | None = None, dismiss: bool = False,
    retract_all: bool = False, note: str = "",
) -> ConflictSet:
    """Close an open set. keep=[ids]: those stay, every other active member is superseded by the first kept
    one. dismiss: all members stay active and are no longer blocked. retract_all: every member is retracted.
    Under the scope's writers' lock, as fact_retract is; raises ConflictSet.DoesNotExist when the subject was
    erased meanwhile."""
    if sum([bool(keep), dismiss, retract_all]) != 1:
        raise ServiceValidationError([{"index": None, "field": "keep", "message": "give exactly one of keep, dismiss, retract_all"}])
    with transaction.atomic():
        _lock_scopes([(conflict_set.project_id, conflict_set.subject_id)])
        conflict_set = ConflictSet.objects.select_for_update().get(id=conflict_set.id,
                                                                    project_id=conflict_set.project_id)
        if conflict_set.status != ConflictStatus.OPEN:
            raise ConflictNotOpen(f"conflict set is {conflict_set.status}")
        now = timezone.now()
        member_ids = set(conflict_set.members.values_list("fact_id", flat=True))
        if dismiss:
            conflict_set.status = ConflictStatus.DISMISSED
        elif retract_all:
            Fact.objects.filter(id__in=member_ids, status=FactStatus.ACTIVE).update(
                status=FactStatus.RETRACTED, recorded_to=now
            )
            conflict_set.members.update(kept=False)
            conflict_set.status = ConflictStatus.RESOLVED
        else:
            keep_ids = list(dict.fromkeys(str(k) for k in keep))
            unknown = [k for k in keep_ids if k not in {str(m) for m in member_ids}]
            if unknown:
                raise ServiceValidationError([{"index": None, "field": "keep", "message": f"not members of this set: {', '.join(unknown)}"}])
            active = set(
                str(i) for i in Fact.objects.filter(id__in=keep_ids, status=FactStatus.ACTIVE).values_list("id", flat=True)
            )
            if keep_ids[0] not in active:
                raise ServiceValidationError([{"index": None, "field": "keep", "message": "the first kept fact is no longer active"}])
            others = [m for m in member_ids if str(m) not in keep_ids]
            _supersede(others, by=keep_ids[0], now=now, project_id=conflict_set.project_id)
            conflict_set.members.filter(fact_id__in=keep_ids).update(kept=True)
            conflict_set.members.filter(fact_id__in=others).update(kept=False)
            conflict_set.status = ConflictStatus.RESOLVED
        conflict_set.resolved_at = now
        conflict_set.resolved_by = actor[:RESOLVED_BY_MAX]
        conflict_set.note = note
        conflict_set.save(update_fields=["status", "resolved_at", "resolved_by", "note"])
    return conflict_set


# Other apps (traces) hold rows about a subject too. They register an eraser here so that erasure stays
# one transaction without this app importing them (the layers: hakimem <- facts <- traces <- context, stats).
# --- a large scope's own word counts (facts.models.ScopeWordCounts) ------------------------------------------

# Words held by at least max(SCOPE_WORDS_MIN_COUNT, items / 1,000) items are listed, at most SCOPE_WORDS_MAX of them
# (the commonest): what the context call's choices turn on are words of hundreds of matches (context/retrieval.py).
SCOPE_WORDS_MIN_COUNT = 10
SCOPE_WORDS_MAX = 2000

# ts_stat runs the query it is given: the scope's ids are quoted into it as literals by psycopg (sql.Literal). A word
# not listed is held by fewer than min_count items or, when the list was cut, by at most as many as the least
# common word listed.
_COUNT_WORDS_SQL = """
WITH listed AS (SELECT word, ndoc FROM ts_stat(%(items_query)s)
                 WHERE ndoc >= %(min_count)s AND word <> hakimem_scope_lexeme(%(p)s, %(s)s)
                 ORDER BY ndoc DESC, word LIMIT %(max_words)s + 1),
     kept AS (SELECT word, ndoc FROM listed ORDER BY ndoc DESC, word LIMIT %(max_words)s),
     scope AS (INSERT INTO facts_scopewordcounts AS c (project_id, subject_id, items_table, items, unlisted_max, counted_at)
               SELECT %(p)s, %(s)s, %(table)s, %(items)s,
                      CASE WHEN (SELECT count(*) FROM listed) > %(max_words)s THEN (SELECT min(ndoc) FROM kept)
                           ELSE %(min_count)s - 1 END, now()
               ON CONFLICT (project_id, subject_id, items_table) DO UPDATE SET items = EXCLUDED.items,
                  unlisted_max = EXCLUDED.unlisted_max, counted_at = EXCLUDED.counted_at)
INSERT INTO facts_scopeword (project_id, subject_id, items_table, word, items)
SELECT %(p)s, %(s)s, %(table)s, word, ndoc FROM kept"""

_SCOPE_WORDS_DELETE = """
DELETE FROM facts_scopeword WHERE project_id = %(p)s AND subject_id = %(s)s AND items_table = %(table)s;
DELETE FROM facts_scopewordcounts WHERE project_id = %(p)s AND subject_id = %(s)s AND items_table = %(table)s"""


def scope_words_count(*, project_id: str, subject_id: str, table: str = "facts_fact") -> int | None:
    """Count again how many of the scope's items (active facts, or events) hold each of its commoner words, and
    store it (facts.models.ScopeWordCounts, ScopeWord); the counts go when the scope holds no item. Under the scope's
    writers' lock, which erasure holds too: an erased scope's words are never written back. Returns the items
    counted."""
    items = SCOPE_ITEMS[table]
    scope = {"p": project_id, "s": subject_id, "table": table}
    with transaction.atomic():
        _lock_scopes([(project_id, subject_id)])
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT count(*) FROM {table} WHERE project_id = %(p)s AND subject_id = %(s)s AND {items}",
                           scope)
            total = cursor.fetchone()[0]
            cursor.execute(_SCOPE_WORDS_DELETE, scope)
            if not total:
                return None
            items_query = sql.SQL("SELECT search_vector FROM {} WHERE project_id = {} AND subject_id = {} AND {}").format(
                sql.Identifier(table), sql.Literal(project_id), sql.Literal(subject_id), sql.SQL(items))
            cursor.execute(_COUNT_WORDS_SQL, {
                **scope, "items": total, "items_query": items_query.as_string(connection.connection),
                "min_count": max(SCOPE_WORDS_MIN_COUNT, total // 1000), "max_words": SCOPE_WORDS_MAX})
    return total


def scope_words_refresh(*, min_items: int) -> int:
    """Count the words of every scope of `min_items` active facts (or events) or more again
    (settings.HAKI_SCOPE_WORDS_MIN_ITEMS: the nightly consolidation), each scope in a transaction of its own, and
    delete the counts of scopes grown smaller. Returns the scopes counted (a scope's facts and events count once
    each)."""
    if min_items <= 0:
        return 0
    counted = 0
    for table in SCOPE_ITEMS:
        large = [(p, s) for p, s, _ in large_scopes(min_items=min_items, table=table)]
        for project_id, subject_id in large:
            counted += scope_words_count(project_id=project_id, subject_id=subject_id, table=table) is not None
        with connection.cursor() as cursor:
            cursor.execute("SELECT project_id, subject_id FROM facts_scopewordcounts WHERE items_table = %s", [table])
            shrunk = set(cursor.fetchall()) - set(large)
        for project_id, subject_id in sorted(shrunk):
            with transaction.atomic():
                _lock_scopes([(project_id, subject_id)])
                with connection.cursor() as cursor:
                    cursor.execute(_SCOPE_WORDS_DELETE, {"p": project_id, "s": subject_id, "table": table})
    return counted


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
    from facts.tasks import QUEUE, extract_event  # procrastinate's app is ready only once Django is

    content_types = ContentType.objects.get_for_models(Fact, ConflictSet, Event, IdentityBlock, Procedure)
    params = {
        "p": project_id, "s": subject_id, "queue": QUEUE, "extract_task": extract_event.name, "ct_fact": content_types[Fact].id,
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
        # Queued extractions name the events by id. A job a worker is running ('doing') is left to end: it finds its
        # event gone and writes nothing (facts.extraction.event_extract). The queue is small (succeeded jobs are
        # deleted): no index on the event id is needed.
        ("extraction_jobs", "DELETE FROM procrastinate_jobs j USING facts_event e WHERE j.queue_name = %(queue)s"
         " AND j.task_name = %(extract_task)s AND j.status <> 'doing' AND j.args->>'event_id' = e.id::text AND "
         + erase_condition(subject_id, "e")),
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
        cursor.execute(_ADMIN_LOG_ENTRIES_SQL.format(
            " UNION ALL ".join(f"SELECT %({ct})s::integer, {alias}.id::text FROM {table} {alias} WHERE "
                               + erase_condition(subject_id, alias) for ct, table, alias in _LOGGED_TABLES)), params)
        content_types, object_ids = cursor.fetchone()
        cursor.execute("SELECT hakimem_admin_log_erase(%s, %s)", [content_types, object_ids])
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


def _erase_category(project_id: str, subject_id: str, category: str) -> dict[str, int]:
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
# entries about the rows the statement names, which the caller's row security lets it see. The rows are gathered by
# a statement of their own: on Citus a statement on one project's shards runs whole on its worker, where the function
# would not find the coordinator's local table.
_ADMIN_LOG_ENTRIES_SQL = "SELECT coalesce(array_agg(e.ct), '{{}}'), coalesce(array_agg(e.id), '{{}}') FROM ({}) AS e(ct, id)"
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


def project_update(*, project_id: str, changes: dict) -> Project:
    """Create the project's row on its first change; `changes` holds validated fields of Project."""
    with transaction.atomic():
        project, _ = Project.objects.select_for_update().get_or_create(project_id=project_id)
        for name, value in changes.items():
            setattr(project, name, value)
        project.full_clean()
        project.save()
    return project


def consent_grant(*, project_id: str, subject_id: str, category: str, actor: str) -> tuple[Consent, bool]:
    """Grant a category; granting one already granted returns the current consent (created False)."""
    with transaction.atomic():
        _lock_scopes([(project_id, subject_id)])
        current = Consent.objects.filter(project_id=project_id, subject_id=subject_id, category=category,
                                         revoked_at__isnull=True).first()
        if current is not None:
            return current, False
        consent = Consent(project_id=project_id, subject_id=subject_id, category=category, granted_at=timezone.now(),
                          granted_by=actor[:RESOLVED_BY_MAX])
        consent.full_clean()
        consent.save()
        return consent, True


def consent_revoke(*, project_id: str, subject_id: str, category: str, actor: str,
                   erase: bool = False) -> tuple[Consent | None, dict[str, int] | None]:
    """Revoke a category from now on (the next context call already withholds it); with `erase`, also delete
    the category's facts and what names them, in the same transaction. Returns the revoked consent (None when
    there was none and erase was asked) and the erasure's receipt (None without erase)."""
    with transaction.atomic():
        _lock_scopes([(project_id, subject_id)])
        current = (Consent.objects.select_for_update()
                   .filter(project_id=project_id, subject_id=subject_id, category=category, revoked_at__isnull=True)
                   .first())
        if current is None and not erase:
            raise ConsentNotFound(f"no current consent to {category!r}")
        if current is not None:
            current.revoked_at = timezone.now()
            current.revoked_by = actor[:RESOLVED_BY_MAX]
            current.save(update_fields=["revoked_at", "revoked_by"])
        receipt = _erase_category(project_id, subject_id, category) if erase else None
    return current, receipt


# --- identity blocks --------------------------------------------------------------------------------------
# Written under their scope's writers' lock, (project, '') for the project-wide ones: a subject's erasure,
# which holds its scope's, never misses one committed meanwhile, and a scope's name and block count are
# checked with no other writer in between.

IDENTITY_FIELDS = ("name", "text", "position", "enabled", "metadata")


def _check_identity_name(*, project_id: str, subject_id: str, name: str, exclude_id=None) -> None:
    taken = IdentityBlock.objects.filter(project_id=project_id, subject_id=subject_id, name=name)
    if exclude_id is not None:
        taken = taken.exclude(id=exclude_id)
    if taken.exists():
        scope = "the project" if not subject_id else "this subject"
        raise ServiceValidationError([{"index": None, "field": "name",
                                       "message": f"{scope} already has an identity block named {name!r}"}])


def identity_block_check_new(*, project_id: str, subject_id: str, name: str) -> None:
    """ServiceValidationError when the scope may not take a block of this name: the name is taken there, or
    the scope holds IDENTITY_BLOCKS_PER_SCOPE already. identity_block_create checks it again under the lock; a
    form asks first, to show the error beside its fields."""
    if IdentityBlock.objects.filter(project_id=project_id, subject_id=subject_id).count() >= IDENTITY_BLOCKS_PER_SCOPE:
        raise ServiceValidationError([{"index": None, "field": "subject_id", "message":
                                       f"a scope holds at most {IDENTITY_BLOCKS_PER_SCOPE} identity blocks"}])
    _check_identity_name(project_id=project_id, subject_id=subject_id, name=name)


def identity_block_create(*, project_id: str, subject_id: str, name: str, text: str, position: int = 0,
                          enabled: bool = True, metadata: dict | None = None) -> IdentityBlock:
    """A new block for the project (subject_id '') or a subject; its name is unique in that scope, and a scope
    holds at most IDENTITY_BLOCKS_PER_SCOPE."""
    with transaction.atomic():
        _lock_scopes([(project_id, subject_id)])
        identity_block_check_new(project_id=project_id, subject_id=subject_id, name=name)
        return IdentityBlock.objects.create(project_id=project_id, subject_id=subject_id, name=name, text=text,
                                            position=position, enabled=enabled, metadata=metadata or {})


def identity_block_update(*, block: IdentityBlock, changes: dict) -> IdentityBlock:
    """Edit IDENTITY_FIELDS in place. Raises IdentityBlock.DoesNotExist when it was deleted (or its subject
    erased) meanwhile."""
    with transaction.atomic():
        _lock_scopes([(block.project_id, block.subject_id)])
        block = IdentityBlock.objects.select_for_update().get(id=block.id, project_id=block.project_id)
        if "name" in changes and changes["name"] != block.name:
            _check_identity_name(project_id=block.project_id, subject_id=block.subject_id, name=changes["name"],
                                 exclude_id=block.id)
        fields = [name for name in IDENTITY_FIELDS if name in changes]
        for name in fields:
            setattr(block, name, changes[name])
        if fields:
            block.save(update_fields=[*fields, "updated_at"])
    return block


def identity_block_delete(*, block: IdentityBlock) -> None:
    """Deleting one already gone is harmless."""
    with transaction.atomic():
        _lock_scopes([(block.project_id, block.subject_id)])
        IdentityBlock.objects.filter(id=block.id).delete()


# --- procedures -------------------------------------------------------------------------------------------

PROCEDURE_FIELDS = ("title", "text", "category", "importance", "metadata")


def procedure_embedding_text(title: str, text: str) -> str:
    """What a procedure's vector is computed from: the title first (an embedder that truncates keeps it), then
    the steps, as its full-text vector reads title || ' ' || text."""
    return f"{title}\n{text}"


def procedure_create(*, project_id: str, subject_id: str, title: str, text: str, category: str = "",
                     importance: float = 0.5, metadata: dict | None = None) -> Procedure:
    """Embedded first, as facts are (a failing embedder refuses the write before anything is stored), then
    stored under the scope's writers' lock."""
    vector = get_embedder().embed([procedure_embedding_text(title, text)])[0]
    with transaction.atomic():
        _lock_scopes([(project_id, subject_id)])
        return Procedure.objects.create(project_id=project_id, subject_id=subject_id, title=title, text=text,
                                        category=category, importance=importance, embedding=vector,
                                        metadata=metadata or {})


class ProcedureNotActive(Exception):
    pass


def procedure_update(*, procedure: Procedure, changes: dict) -> Procedure:
    """Edit PROCEDURE_FIELDS in place (a procedure has no versions: its steps are meant to be kept current); a
    new title or text is embedded again. Only an active procedure changes: ProcedureNotActive otherwise, and
    Procedure.DoesNotExist when its scope was erased meanwhile."""
    title, text = changes.get("title", procedure.title), changes.get("text", procedure.text)
    vector = None
    if (title, text) != (procedure.title, procedure.text):
        vector = get_embedder().embed([procedure_embedding_text(title, text)])[0]
    with transaction.atomic():
        _lock_scopes([(procedure.project_id, procedure.subject_id)])
        procedure = (Procedure.objects.select_for_update().defer("search_vector")
                     .get(id=procedure.id, project_id=procedure.project_id))
        if procedure.status != ProcedureStatus.ACTIVE:
            raise ProcedureNotActive(f"the procedure is {procedure.status}")
        before = (procedure.title, procedure.text)
        fields = [name for name in PROCEDURE_FIELDS if name in changes]
        for name in fields:
            setattr(procedure, name, changes[name])
        after = (procedure.title, procedure.text)
        if after != before:  # embedded above, unless another edit changed the other half meanwhile
            procedure.embedding = vector if vector is not None and after == (title, text) else (
                get_embedder().embed([procedure_embedding_text(*after)])[0])
            fields.append("embedding")
        if fields:
            procedure.save(update_fields=[*fields, "updated_at"])
    return procedure


def procedure_retract(*, procedure: Procedure) -> Procedure:
    """Never served again; kept (with the traces that served it) until its scope is erased. Retracting twice
    is harmless; Procedure.DoesNotExist when its scope was erased meanwhile."""
    with transaction.atomic():
        _lock_scopes([(procedure.project_id, procedure.subject_id)])
        procedure = (Procedure.objects.select_for_update().defer("search_vector")
                     .get(id=procedure.id, project_id=procedure.project_id))
        if procedure.status != ProcedureStatus.RETRACTED:
            procedure.status = ProcedureStatus.RETRACTED
            procedure.save(update_fields=["status", "updated_at"])
    return procedure


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
        _lock_scopes([(project_id, subject_id)])
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
