"""Fact writes: one fact or a batch, a new version, a retraction, and consolidation's merge of near-duplicates. The
API and the admin call these and nothing else writes facts.

Every write takes its scopes' writers' lock first (facts.locks), so conflict detection always sees the facts
committed before it. Embedding happens before the lock (it is the slow part), so a failing embedder refuses the
request before anything is written.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from facts import selectors
from facts.conflicts import conflict_record, fact_supersede
from facts.errors import ConsentMissing, ServiceValidationError
from facts.locks import lock_scopes
from facts.models import ConflictSet, ConsentWritePolicy, Event, Fact, FactKind, FactStatus, Volatility
from facts.text import Signal, text_hash
from facts.verdicts import CONFLICT, DUPLICATE, Candidate, Statements, pair_verdict
from hakimem import telemetry
from hakimem.embeddings import get_embedder, is_degenerate, thresholds

logger = logging.getLogger("hakimem.facts")

MAX_BATCH = 500


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
    with telemetry.span("hakimem.facts.write", items=len(items)) as span:
        _check_source_events(items)
        started = time.perf_counter()
        vectors = get_embedder().embed([item.text for item in items])
        embedded = time.perf_counter()
        with transaction.atomic():
            lock_scopes((item.project_id, item.subject_id) for item in items)
            results = _store_facts(items, vectors, actor=actor, exclude_ids=list(exclude_ids))
        if span.recording:
            span.phase("embed", started, embedded)
            span.phase("store", embedded, time.perf_counter())
            span.set(
                project_id=batch_project(items),
                created=sum(not r.deduplicated for r in results),
                deduplicated=sum(r.deduplicated for r in results),
                conflicts=len({r.conflict_set.id for r in results if r.conflict_set is not None}),
            )
        return results


def batch_project(items) -> str | None:
    """The project of a batch's items when they share one (every API request's do), for its span."""
    projects = {item.project_id for item in items}
    return projects.pop() if len(projects) == 1 else None


def fact_create(*, actor: str, **fields) -> FactWriteResult:
    return fact_create_batch(items=[FactInput(**fields)], actor=actor)[0]


Scope = tuple[str, str]  # (project_id, subject_id)


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
            errors.append(
                {
                    "index": n,
                    "field": "category",
                    "message": f"not one of the project's categories ({', '.join(project.categories)})",
                }
            )
        elif project.consent_required and not item.category:
            errors.append(
                {
                    "index": n,
                    "field": "category",
                    "message": "required: this project serves facts by the categories its subjects consent to",
                }
            )
        elif (
            project.consent_required
            and project.consent_write_policy == ConsentWritePolicy.REFUSE
            and item.category not in consents[(item.project_id, item.subject_id)]
        ):
            missing.append(
                {
                    "index": n,
                    "field": "category",
                    "message": f"the subject has not consented to the category {item.category!r}",
                }
            )
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
        for fact in (
            Fact.objects.filter(
                project_id=project_id,
                subject_id=subject_id,
                status=FactStatus.ACTIVE,
                text_hash__in={hashes[i] for i in indexes},
            )
            .exclude(id__in=exclude_ids)
            .defer("embedding", "search_vector")
        ):
            stored.by_hash[(project_id, subject_id, fact.text_hash)] = fact
        probe = [i for i in indexes if (project_id, subject_id, hashes[i]) not in stored.by_hash]
        # A vector cosine cannot rank by (all zeros, NaN) has no neighbours: its distances are NaN, and a NaN
        # similarity passes no threshold test the way a number would. Exact repeats were found above by text.
        usable = [i for i in probe if not is_degenerate(vectors[i])]
        if len(usable) < len(probe):
            logger.warning(
                "facts: %d item(s) with a degenerate vector, compared by text only", len(probe) - len(usable)
            )
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


def _compare(text: str, candidates: list[Candidate], statements: Statements) -> tuple[list, object | None]:
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
    limits = thresholds()
    min_similarity = min(limits.claim_min_similarity, limits.conflict_min_similarity)
    plan = _Plan(results=[None] * len(batch.items), projects={item.project_id for item in batch.items})
    earlier = _EarlierFacts(batch.vectors, batch.by_scope)
    statements = Statements()
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
        conflicts, duplicate_of = _compare(
            item.text, candidates + earlier.similar(scope, i, min_similarity), statements
        )
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
        project_id=item.project_id,
        subject_id=item.subject_id,
        text=item.text,
        text_hash=digest,
        embedding=vector,
        category=item.category,
        kind=item.kind,
        importance=item.importance,
        volatility=item.volatility,
        valid_from=item.valid_from,
        valid_to=item.valid_to,
        recorded_from=now,
        last_confirmed_at=now,
        source_event_id=item.source_event_id,
        metadata=item.metadata,
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
            conflict_set = conflict_record(new.fact, new.conflicts, actor=actor, now=now, policy=policy)
            for result in results_of[new.fact.id]:
                result.conflict_set = conflict_set
    return plan.results


def _answer_duplicates(plan: _Plan) -> None:
    """Near-duplicates of facts already stored or just stored: the stored one answers, re-confirmed."""
    new_by_id = {n.fact.id: n.fact for n in plan.new}
    missing = {fact_id for fact_id in plan.duplicate_of.values() if fact_id not in new_by_id}
    stored = (
        {
            f.id: f
            for f in Fact.objects.filter(project_id__in=plan.projects, id__in=missing).defer(
                "embedding", "search_vector"
            )
        }
        if missing
        else {}
    )
    for i, fact_id in plan.duplicate_of.items():
        fact = new_by_id.get(fact_id) or stored[fact_id]
        if fact.id not in new_by_id:
            plan.reconfirm[fact.id] = fact
        plan.results[i] = FactWriteResult(fact=fact, deduplicated=True)


IN_PLACE_FIELDS = ("category", "importance", "volatility", "valid_to", "metadata")


def fact_update(*, fact: Fact, changes: dict, actor: str) -> FactWriteResult:
    """PATCH. A new text is a new version: a new fact in the same scope supersedes this one (other fields
    carried over unless changed). Without a text change, the listed fields are edited in place."""
    if fact.status != FactStatus.ACTIVE:
        raise ServiceValidationError(
            [
                {
                    "index": None,
                    "field": "status",
                    "message": f"the fact is {fact.status}; only active facts can be edited",
                }
            ]
        )
    new_text = changes.get("text")
    if new_text is None or text_hash(new_text) == fact.text_hash:
        return _fact_edit_in_place(fact, changes, new_text)
    return _fact_new_version(fact, changes, new_text, actor=actor)


def _fact_edit_in_place(fact: Fact, changes: dict, new_text: str | None) -> FactWriteResult:
    """The IN_PLACE_FIELDS changed on the row itself, and a text that normalises to the same one (a cosmetic edit)."""
    with transaction.atomic():
        lock_scopes([(fact.project_id, fact.subject_id)])
        fact = Fact.objects.select_for_update().get(id=fact.id, project_id=fact.project_id)
        if fact.status != FactStatus.ACTIVE:
            raise ServiceValidationError([{"index": None, "field": "status", "message": f"the fact is {fact.status}"}])
        if "category" in changes:
            _check_categories(
                [
                    FactInput(
                        project_id=fact.project_id,
                        subject_id=fact.subject_id,
                        text=fact.text,
                        category=changes["category"],
                    )
                ]
            )
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


def _fact_new_version(fact: Fact, changes: dict, new_text: str, *, actor: str) -> FactWriteResult:
    """A new fact in the same scope, with the other fields carried over unless changed, superseding `fact`."""
    carried = {
        "category": fact.category,
        "kind": fact.kind,
        "importance": fact.importance,
        "volatility": fact.volatility,
        "valid_from": fact.valid_from,
        "valid_to": fact.valid_to,
        "source_event_id": fact.source_event_id,
        "metadata": fact.metadata,
    }
    carried.update({k: v for k, v in changes.items() if k in carried})
    item = FactInput(project_id=fact.project_id, subject_id=fact.subject_id, text=new_text, **carried)
    vector = get_embedder().embed([new_text])
    with transaction.atomic():
        lock_scopes([(fact.project_id, fact.subject_id)])
        old = Fact.objects.select_for_update().get(id=fact.id, project_id=fact.project_id)
        if old.status != FactStatus.ACTIVE:
            raise ServiceValidationError([{"index": None, "field": "status", "message": f"the fact is {old.status}"}])
        result = _store_facts([item], vector, actor=actor, exclude_ids=[old.id])[0]
        fact_supersede([old.id], by=result.fact.id, now=timezone.now(), project_id=old.project_id)
        return result


def fact_retract(*, fact: Fact) -> Fact:
    """Retracted facts are never served again. Retracting twice is harmless. Raises Fact.DoesNotExist when the
    fact's subject was erased meanwhile.

    Under the scope's writers' lock, which erasure holds too: a caller that records something about the fact in
    the same transaction (the admin's log entry) has it committed before an erasure starts, which then deletes
    it, or finds the fact gone."""
    with transaction.atomic():
        lock_scopes([(fact.project_id, fact.subject_id)])
        fact = Fact.objects.select_for_update().get(id=fact.id, project_id=fact.project_id)
        if fact.status != FactStatus.RETRACTED:
            fact.status = FactStatus.RETRACTED
            fact.recorded_to = fact.recorded_to or timezone.now()
            fact.save(update_fields=["status", "recorded_to"])
    return fact


# --- consolidation: near-duplicates merged ------------------------------------------------------------------


def fact_merge_duplicates(*, project_id: str, subject_id: str, recorded_since: datetime | None = None) -> int:
    """Merge the scope's active near-duplicates with a fact recorded since `recorded_since` (None: all), as the
    write path would have had the newer come after the older was stored: a newer fact that pair_verdict calls a
    duplicate of an older one (at least the embedder's duplicate threshold alike, no contradiction, names nothing the
    older does not) is answered by the older, which it re-confirms (the later last_confirmed_at), and is
    superseded by it. A newer fact that adds something stays, as at write time. Two such facts get stored when a
    write's neighbour probe missed the other, before a threshold changed, or by an import. Pairs come from
    facts.selectors.fact_near_duplicates, most alike first; a pair with a member in an open conflict set is left
    to the curator. Under the scope's writers' lock. Returns the number of facts superseded."""
    with transaction.atomic():
        lock_scopes([(project_id, subject_id)])
        pairs = selectors.fact_near_duplicates(
            project_id=project_id,
            subject_id=subject_id,
            recorded_since=recorded_since,
            min_similarity=thresholds().duplicate_similarity,
        )
        if not pairs:
            return 0
        ids = {i for a, b, _ in pairs for i in (a, b)}
        facts = {
            f.id: f
            for f in Fact.objects.filter(project_id=project_id, id__in=ids, status=FactStatus.ACTIVE)
            .exclude(selectors.in_open_conflict_q())
            .only("id", "text", "recorded_from", "last_confirmed_at")
        }
        statements = Statements()
        now = timezone.now()
        merged = 0
        for a, b, similarity in sorted(pairs, key=lambda p: (-p[2], str(p[0]), str(p[1]))):
            if a not in facts or b not in facts:  # superseded earlier in this run, or blocked
                continue
            older, newer = sorted((facts[a], facts[b]), key=lambda f: (f.recorded_from, str(f.id)))  # write order
            if pair_verdict(statements(newer.text), statements(older.text), similarity)[0] != DUPLICATE:
                continue
            if newer.last_confirmed_at > older.last_confirmed_at:
                Fact.objects.filter(project_id=project_id, id=older.id).update(
                    last_confirmed_at=newer.last_confirmed_at
                )
                older.last_confirmed_at = newer.last_confirmed_at
            merged += fact_supersede([newer.id], by=older.id, now=now, project_id=project_id)
            del facts[newer.id]
        return merged
