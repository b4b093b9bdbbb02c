"""The access frequency signal: how often each item was served by past context calls, decayed over time
(traces.models.ItemAccess), kept by the trace writer and read by the assembler (traces.selectors)."""

import math
import random
import threading
import uuid
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.core.management import call_command
from django.db import connection, connections
from django.utils import timezone

from privacy.services import consent_revoke, subject_erase
from tests.conftest import PROJECT
from tests.facts.factories import EventFactory, FactFactory
from tests.traces.factories import record_call
from traces.models import ACCESS_TAU_DAYS, ItemAccess
from traces.selectors import ACCESS_HALF, access_frequency, access_score, access_signal

pytestmark = pytest.mark.django_db

TAU = timedelta(days=ACCESS_TAU_DAYS)


def counts(subject_id="alice") -> dict:
    return {a.item_id: (a.count, a.at) for a in ItemAccess.objects.filter(project_id=PROJECT, subject_id=subject_id)}


def test_a_call_counts_the_items_it_served_and_nothing_else():
    # given a call that served a fact, brought one by multi-hop and an episode, and left three out
    now = timezone.now()
    served, hop, over, blocked, floor = FactFactory.create_batch(5)
    event = EventFactory()
    record_call(
        at=now,
        facts=[
            (served, "included"),
            (hop, "multi_hop_expansion"),
            (over, "over_budget"),
            (blocked, "conflict_open"),
            (floor, "below_relevance_floor"),
        ],
        episodes=[(event, "included")],
    )
    # then the three served items count once each, as of the call's time
    assert counts() == {served.id: (1.0, now), hop.id: (1.0, now), event.id: (1.0, now)}
    assert dict(ItemAccess.objects.values_list("item_id", "item_type")) == {
        served.id: "fact",
        hop.id: "fact",
        event.id: "episode",
    }


def test_each_serving_decays_with_its_age():
    # given a fact served, then served again one tau later
    start = timezone.now() - 2 * TAU
    fact = FactFactory()
    record_call(at=start, facts=[(fact, "included")])
    record_call(at=start + TAU, facts=[(fact, "included")])
    # then its count is the first serving decayed by e, plus one, as of the second
    count, at = counts()[fact.id]
    assert count == pytest.approx(math.exp(-1) + 1) and at == start + TAU
    # and read one more tau later, both servings have decayed once more
    later = access_frequency(project_id=PROJECT, subject_id="alice", item_ids=[fact.id], now=start + 2 * TAU)
    assert later[fact.id] == pytest.approx((math.exp(-1) + 1) * math.exp(-1))


def test_a_call_recorded_after_a_later_one_adds_its_serving_decayed_to_the_later_time():
    # given a fact served by a call at t + tau, then by a call that started at t but wrote its trace after
    t = timezone.now() - TAU
    fact = FactFactory()
    record_call(at=t + TAU, facts=[(fact, "included")])
    record_call(at=t, facts=[(fact, "included")])
    # then the count is as of t + tau: the earlier serving weighs exp(-1), and the count never grew by decay
    count, at = counts()[fact.id]
    assert count == pytest.approx(1 + math.exp(-1)) and at == t + TAU


def test_replays_count_nothing():
    fact = FactFactory()
    original = record_call(at=timezone.now(), facts=[(fact, "included")])
    record_call(at=timezone.now(), facts=[(fact, "included")], replay_of=original)
    assert counts()[fact.id][0] == 1.0


def test_an_item_named_twice_in_one_call_counts_once():
    # the assembler decides each candidate once; a writer given two lines for one item must still write
    fact = FactFactory()
    record_call(at=timezone.now(), facts=[(fact, "included"), (fact, "multi_hop_expansion")])
    assert counts()[fact.id][0] == 1.0


def test_a_trace_the_writer_refuses_counts_nothing():
    # given a call that read a fact which was erased before its trace was written
    fact, kept = FactFactory(), FactFactory()
    read = SimpleNamespace(id=fact.id, text=fact.text)
    fact.delete()
    # when its trace is recorded, it is not written, and neither is any access count
    record_call(at=timezone.now(), facts=[(kept, "included"), (read, "included")])
    assert not ItemAccess.objects.exists()


def test_access_frequency_answers_every_id_asked_within_the_scope_in_one_query(django_assert_num_queries):
    # given facts of alice served once and twice, a fact never served, and bob's fact served
    now = timezone.now()
    once, twice, never = FactFactory.create_batch(3)
    bobs = FactFactory(subject_id="bob")
    record_call(at=now - TAU, facts=[(once, "included"), (twice, "included")])
    record_call(at=now - TAU, facts=[(twice, "included")])
    record_call(at=now, subject_id="bob", facts=[(bobs, "included")])
    # when alice's call asks for all four (ids as strings, as a client would name them)
    with django_assert_num_queries(1):
        found = access_frequency(
            project_id=PROJECT, subject_id="alice", item_ids=[once.id, twice.id, never.id, str(bobs.id)], now=now
        )
    # then each is decayed to now, the unserved one and bob's count 0 here, keyed as asked
    assert found == pytest.approx({once.id: math.exp(-1), twice.id: 2 * math.exp(-1), never.id: 0.0, str(bobs.id): 0.0})
    assert access_frequency(project_id=PROJECT, subject_id="alice", item_ids=[], now=now) == {}


def test_access_score_is_a_share_in_zero_one_half_at_access_half():
    assert access_score(0.0) == 0.0
    assert access_score(ACCESS_HALF) == 0.5
    scores = [access_score(c) for c in (0.1, 1, 5, 20, 1e6)]
    assert scores == sorted(scores) and all(0 < s < 1 for s in scores)


def test_access_signal_is_the_score_of_each_items_count(django_assert_num_queries):
    now = timezone.now()
    often, never = FactFactory.create_batch(2)
    for _ in range(int(ACCESS_HALF)):
        record_call(at=now, facts=[(often, "included")])
    with django_assert_num_queries(1):
        assert access_signal(project_id=PROJECT, subject_id="alice", item_ids=[often.id, never.id], now=now) == {
            often.id: pytest.approx(0.5),
            never.id: 0.0,
        }


def test_the_access_frequency_query_probes_the_primary_key():
    from traces.selectors import ACCESS_FREQUENCY_SQL

    # given the counts of a scope of 4,000 served items among 20,000 of many scopes
    now = timezone.now()
    rows = [
        ItemAccess(
            project_id=PROJECT if i < 4000 else f"p{i % 50}",
            subject_id="alice" if i < 4000 else f"s{i % 7}",
            item_type="fact",
            item_id=uuid.uuid4(),
            count=1.0,
            at=now,
        )
        for i in range(20000)
    ]
    ItemAccess.objects.bulk_create(rows, batch_size=5000)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE traces_itemaccess")
        # when a call asks for its 128 candidates' counts
        cursor.execute(
            "EXPLAIN " + ACCESS_FREQUENCY_SQL,
            {
                "project_id": PROJECT,
                "subject_id": "alice",
                "now": now,
                "item_ids": [str(r.item_id) for r in rows[:128]],
                "tau": 1.0,
            },
        )
        plan = "\n".join(r[0] for r in cursor.fetchall())
    # then the primary key answers them, with the ids as its condition (a probe per id, not the scope's rows)
    assert "Index Scan using traces_itemaccess_pkey" in plan and "item_id = ANY" in plan.split("Index Cond")[1], plan


# --- erasure and retention ------------------------------------------------------------------------------


def test_erasing_a_subject_deletes_its_access_counts_and_the_receipt_counts_them():
    now = timezone.now()
    fact, bobs = FactFactory(), FactFactory(subject_id="bob")
    record_call(at=now, facts=[(fact, "included")])
    record_call(at=now, subject_id="bob", facts=[(bobs, "included")])
    receipt = subject_erase(project_id=PROJECT, subject_id="alice")
    assert receipt["item_accesses"] == 1
    assert list(ItemAccess.objects.values_list("item_id", flat=True)) == [bobs.id]


def test_erasing_a_revoked_category_deletes_the_access_counts_of_its_facts(settings):
    # given a project requiring consent, a served fact of the revoked category and one of another category
    from facts.models import Project

    Project.objects.create(project_id=PROJECT, consent_required=True, consent_write_policy="store")
    health, work = FactFactory(category="health"), FactFactory(category="work")
    record_call(at=timezone.now(), facts=[(health, "included")])
    record_call(at=timezone.now(), facts=[(work, "included")])
    # when the category is revoked with erasure
    _, receipt = consent_revoke(project_id=PROJECT, subject_id="alice", category="health", actor="t", erase=True)
    # then only its fact's count goes, and the receipt says so
    assert receipt["item_accesses"] == 1
    assert list(ItemAccess.objects.values_list("item_id", flat=True)) == [work.id]


def test_pruning_traces_keeps_the_access_counts(settings):
    settings.HAKI_TRACE_RETENTION_DAYS = 30
    fact = FactFactory()
    record_call(at=timezone.now() - 3 * TAU, facts=[(fact, "included")])
    call_command("prune_traces", stdout=open("/dev/null", "w"))
    assert counts()[fact.id][0] == 1.0


# --- concurrent writers -----------------------------------------------------------------------------------

WRITERS = 6
CALLS_PER_WRITER = 12


@pytest.mark.django_db(transaction=True)
def test_concurrent_calls_serving_the_same_items_never_deadlock():
    # given one scope's facts, and writers on their own connections whose calls each serve the same 30 of them,
    # each call listing its decisions in its own order (as ranks differ from call to call)
    facts = FactFactory.create_batch(30)
    at = timezone.now()
    errors, start = [], threading.Barrier(WRITERS)

    def write(seed: int) -> None:
        rng = random.Random(seed)
        try:
            start.wait()
            for _ in range(CALLS_PER_WRITER):
                served = rng.sample(facts, len(facts))
                record_call(at=at, facts=[(f, "included") for f in served])
        except Exception as exc:  # noqa: BLE001 - the test reports whatever a writer met
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=write, args=(n,)) for n in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    # then no writer met a deadlock (or anything else), and every serving counted (same time: no decay)
    assert errors == []
    assert set(counts().values()) == {(float(WRITERS * CALLS_PER_WRITER), at)}
