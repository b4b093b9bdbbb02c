"""Conflict sets: opened (or joined) when a write or a context call finds facts that contradict each other,
resolved by a curator or, under a project's newest_wins policy, at once by superseding the older facts."""

from __future__ import annotations

import logging
import uuid
from collections import defaultdict
from dataclasses import dataclass, field

from django.db import transaction
from django.utils import timezone

from facts import selectors
from facts.errors import ConflictNotOpen, ServiceValidationError
from facts.locks import lock_scopes, try_lock_scope
from facts.models import (
    RESOLVED_BY_MAX,
    SIGNAL_DETAIL_MAX,
    ConflictMember,
    ConflictPolicy,
    ConflictSet,
    ConflictStatus,
    Fact,
    FactStatus,
)
from facts.text import Signal

logger = logging.getLogger("hakimem.facts")


def fact_supersede(fact_ids, *, by, now, project_id: str) -> int:
    """Supersede the active facts among `fact_ids` by the fact `by`: a resolved conflict, a new version, a merged
    near-duplicate. Returns how many were."""
    return Fact.objects.filter(project_id=project_id, id__in=list(fact_ids), status=FactStatus.ACTIVE).update(
        status=FactStatus.SUPERSEDED, recorded_to=now, superseded_by_id=by
    )


def conflict_record(fact: Fact, conflicts, *, actor: str, now, policy: str) -> ConflictSet:
    """Open (or join) a conflict set for `fact` and the facts it contradicts; under the newest_wins policy,
    supersede the older ones at once and record the set as resolved by the system."""
    other_ids = [fid for fid, _, _ in conflicts]
    fid, similarity, signal = max(conflicts, key=lambda c: c[1])
    if policy == ConflictPolicy.NEWEST_WINS:
        return _newest_wins(fact, other_ids, similarity, signal, now=now)
    return _open_sets_join(fact, other_ids, similarity, signal, now=now)


def _newest_wins(fact: Fact, other_ids: list, similarity: float, signal: Signal, *, now) -> ConflictSet:
    """A set resolved at once by the project's policy: `fact` kept, the facts it contradicts superseded."""
    conflict_set = ConflictSet.objects.create(
        project_id=fact.project_id,
        subject_id=fact.subject_id,
        status=ConflictStatus.RESOLVED,
        signal=signal.rule,
        signal_detail=signal.detail[:SIGNAL_DETAIL_MAX],
        reading=signal.reading or {},
        similarity=similarity,
        opened_at=now,
        resolved_at=now,
        resolved_by="system:newest_wins",
        note="Newest fact kept by the project's conflict policy.",
    )
    ConflictMember.objects.bulk_create(
        [ConflictMember(project_id=fact.project_id, conflict_set=conflict_set, fact=fact, added_at=now, kept=True)]
        + [
            ConflictMember(project_id=fact.project_id, conflict_set=conflict_set, fact_id=o, added_at=now, kept=False)
            for o in other_ids
        ]
    )
    fact_supersede(other_ids, by=fact.id, now=now, project_id=fact.project_id)
    return conflict_set


def _open_sets_join(fact: Fact, other_ids: list, similarity: float, signal: Signal, *, now) -> ConflictSet:
    """Pairwise membership: the new fact joins each open set holding a fact it contradicts (by a rule, above the
    similarity threshold), and the facts it contradicts that are in no open set join it there. Sets are never merged
    through a fact that bridges them: a set then holds only facts that each contradict one of its members, not every
    fact one similar sentence led to (merged sets grew to 28 members on average on LoCoMo's chats, each blocking all
    of them). Returns the first of the sets, a new one when none was open."""
    open_sets = list(
        ConflictSet.objects.select_for_update()
        .filter(
            project_id=fact.project_id,
            status=ConflictStatus.OPEN,
            id__in=ConflictMember.objects.filter(project_id=fact.project_id, fact_id__in=other_ids).values(
                "conflict_set_id"
            ),
        )
        .order_by("opened_at", "id")
    )
    in_open_sets = set(
        ConflictMember.objects.filter(
            project_id=fact.project_id, conflict_set__in=open_sets, fact_id__in=other_ids
        ).values_list("fact_id", flat=True)
    )
    loose = [f for f in other_ids if f not in in_open_sets]
    if not open_sets:
        open_sets = [
            ConflictSet.objects.create(
                project_id=fact.project_id,
                subject_id=fact.subject_id,
                signal=signal.rule,
                signal_detail=signal.detail[:SIGNAL_DETAIL_MAX],
                reading=signal.reading or {},
                similarity=similarity,
                opened_at=now,
            )
        ]
    members = [ConflictMember(project_id=fact.project_id, conflict_set=s, fact=fact, added_at=now) for s in open_sets]
    members += [
        ConflictMember(project_id=fact.project_id, conflict_set=open_sets[0], fact_id=f, added_at=now) for f in loose
    ]
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
    active = set(
        Fact.objects.filter(
            id__in={i for key in best for i in key},
            project_id=project_id,
            subject_id=subject_id,
            status=FactStatus.ACTIVE,
        ).values_list("id", flat=True)
    )
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


def _record_contradictions(
    *, project_id: str, subject_id: str, pairs, actor: str, policy: str
) -> ContradictionsRecorded:
    """Each winner's pairs through the write path's conflict_record, as if the winner had just been written:
    under curator, opened or joined sets; under newest_wins, its losers superseded and a set recorded as resolved
    by the system. Winners newest first, a fact superseded on the way superseding nothing more: with C over B and
    B over A, A stays (as context.contradictions decides within a call)."""
    now = timezone.now()
    distinct = {(str(p.winner_id), str(p.loser_id)) for p in pairs if str(p.winner_id) != str(p.loser_id)}
    by_winner = _pairs_to_record(project_id, subject_id, pairs)
    winners = sorted(
        Fact.objects.filter(project_id=project_id, id__in=list(by_winner)).defer("embedding", "search_vector"),
        key=lambda f: (f.valid_from or f.recorded_from, f.recorded_from, str(f.id)),
        reverse=True,
    )
    gone: set[uuid.UUID] = set()
    done = ContradictionsRecorded()
    for winner in winners:
        conflicts = [c for c in by_winner[winner.id] if c[0] not in gone]
        if winner.id in gone or not conflicts:
            continue
        conflict_set = conflict_record(winner, conflicts, actor=actor, now=now, policy=policy)
        if conflict_set not in done.sets:
            done.sets.append(conflict_set)
        done.pairs += len(conflicts)
        if policy == ConflictPolicy.NEWEST_WINS:
            gone.update(c[0] for c in conflicts)
            done.superseded += len(conflicts)
    done.skipped = len(distinct) - done.pairs
    return done


def contradiction_propose(
    *, project_id: str, subject_id: str, pairs, actor: str, wait: bool = True
) -> list[ConflictSet]:
    """Propose to curators the contradicting pairs a context call found among its candidates: under the project's
    curator policy, each pair opens or joins a conflict set exactly as a write of its winner would
    (conflict_record). `pairs`: objects with winner_id, loser_id, similarity, rule and detail
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
            lock_scopes([(project_id, subject_id)])
        elif not try_lock_scope(project_id, subject_id):
            return []
        return _record_contradictions(
            project_id=project_id, subject_id=subject_id, pairs=pairs, actor=actor, policy=ConflictPolicy.CURATOR
        ).sets


def contradiction_settle(*, project_id: str, subject_id: str, pairs, actor: str) -> ContradictionsRecorded:
    """What consolidation does with the pairs query time decided for one call each: under newest_wins, the
    loser is superseded by the winner, recorded as the write path records that policy (a conflict set resolved
    by the system); under curator, the pair is proposed (contradiction_propose). Same pairs and same idempotence
    as contradiction_propose."""
    if not pairs:
        return ContradictionsRecorded()
    policy = selectors.project_settings(project_id).conflict_policy
    with transaction.atomic():
        lock_scopes([(project_id, subject_id)])
        return _record_contradictions(
            project_id=project_id, subject_id=subject_id, pairs=pairs, actor=actor, policy=policy
        )


def conflict_resolve(
    *,
    conflict_set: ConflictSet,
    actor: str,
    keep: list | None = None,
    dismiss: bool = False,
    retract_all: bool = False,
    note: str = "",
) -> ConflictSet:
    """Close an open set. keep=[ids]: those stay, every other active member is superseded by the first kept
    one. dismiss: all members stay active and are no longer blocked. retract_all: every member is retracted.
    Under the scope's writers' lock, as fact_retract is; raises ConflictSet.DoesNotExist when the subject was
    erased meanwhile."""
    if sum([bool(keep), dismiss, retract_all]) != 1:
        raise ServiceValidationError(
            [{"index": None, "field": "keep", "message": "give exactly one of keep, dismiss, retract_all"}]
        )
    with transaction.atomic():
        lock_scopes([(conflict_set.project_id, conflict_set.subject_id)])
        conflict_set = ConflictSet.objects.select_for_update().get(
            id=conflict_set.id, project_id=conflict_set.project_id
        )
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
                raise ServiceValidationError(
                    [{"index": None, "field": "keep", "message": f"not members of this set: {', '.join(unknown)}"}]
                )
            active = set(
                str(i)
                for i in Fact.objects.filter(id__in=keep_ids, status=FactStatus.ACTIVE).values_list("id", flat=True)
            )
            if keep_ids[0] not in active:
                raise ServiceValidationError(
                    [{"index": None, "field": "keep", "message": "the first kept fact is no longer active"}]
                )
            others = [m for m in member_ids if str(m) not in keep_ids]
            fact_supersede(others, by=keep_ids[0], now=now, project_id=conflict_set.project_id)
            conflict_set.members.filter(fact_id__in=keep_ids).update(kept=True)
            conflict_set.members.filter(fact_id__in=others).update(kept=False)
            conflict_set.status = ConflictStatus.RESOLVED
        conflict_set.resolved_at = now
        conflict_set.resolved_by = actor[:RESOLVED_BY_MAX]
        conflict_set.note = note
        conflict_set.save(update_fields=["status", "resolved_at", "resolved_by", "note"])
    return conflict_set
