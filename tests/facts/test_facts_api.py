"""POST/GET/PATCH/DELETE /v1/facts, /v1/events, /v1/conflicts and subject erasure."""

import threading
from datetime import timedelta

import pytest
from django.db import connection, connections, transaction
from django.utils import timezone

from facts.conflicts import conflict_record
from facts.writes import fact_create
from facts.models import ConflictSet, Event, Fact
from tests.conftest import ON_CITUS, PROJECT, REQUEST_OVERHEAD_QUERIES, error_code, rows_mentioning
from tests.facts.factories import EventFactory, FactFactory
from traces.models import Decision, ItemAccess

pytestmark = pytest.mark.django_db

NANTES = "Paul lives in Nantes with his wife and their two children."
BORDEAUX = "Paul lives in Bordeaux with his wife and their two children."
LILLE = "Paul lives in Lille with his wife and their two children."


def fact(text, subject="alice", **extra):
    return {"project_id": PROJECT, "subject_id": subject, "text": text, **extra}


def post_fact(api, text, **extra):
    response = api.post("/v1/facts", fact(text, **extra), format="json")
    assert response.status_code == 201, response.content
    return response.json()


# --- create ------------------------------------------------------------------------------------------


def test_create_one_fact(api):
    body = post_fact(
        api,
        "Alice is allergic to peanuts.",
        category="health",
        kind="fact",
        importance=0.9,
        volatility="stable",
        valid_from="2024-01-01T00:00:00+02:00",
        metadata={"source": "chat"},
    )
    assert body["deduplicated"] is False and body["conflict_set_id"] is None
    assert body["status"] == "active" and body["category"] == "health" and body["importance"] == 0.9
    assert body["valid_from"] == "2023-12-31T22:00:00Z"  # stored and answered in UTC
    assert body["recorded_from"].endswith("Z") and body["recorded_to"] is None
    stored = Fact.objects.get(id=body["id"])
    assert stored.metadata == {"source": "chat"} and stored.last_confirmed_at == stored.recorded_from


def test_create_a_batch(api):
    response = api.post(
        "/v1/facts", {"facts": [fact("Alice plays the cello."), fact("Alice speaks Portuguese.")]}, format="json"
    )
    assert response.status_code == 201
    assert [f["text"] for f in response.json()["facts"]] == ["Alice plays the cello.", "Alice speaks Portuguese."]
    assert Fact.objects.count() == 2


def test_batch_is_all_or_nothing_and_names_each_bad_item(api):
    items = [
        fact("Alice plays the cello."),
        fact("   "),
        fact("Alice was born in Porto.", valid_from="2020-01-01T00:00:00"),
        fact("Alice likes jazz.", importance="high"),
        {"project_id": PROJECT, "subject_id": "bad subject!", "text": "x"},
    ]
    response = api.post("/v1/facts", {"facts": items}, format="json")
    assert response.status_code == 400
    assert error_code(response) == "invalid_request"
    errors = {(e["index"], e["field"]) for e in response.json()["error"]["details"]["errors"]}
    assert errors == {(1, "text"), (2, "valid_from"), (3, "importance"), (4, "subject_id")}
    assert Fact.objects.count() == 0


@pytest.mark.parametrize(
    "payload, field",
    [
        (fact("x", valid_from="2024-02-01T00:00:00Z", valid_to="2024-01-01T00:00:00Z"), "valid_to"),
        (fact("x", metadata=["a"]), "metadata"),
        (fact("x", kind="opinion"), "kind"),
        (fact("x", importance=True), "importance"),
        (fact("x", importance=1.5), "importance"),
        (fact("x" * 8001), "text"),
        (fact(42), "text"),
        (fact("x", colour="blue"), "colour"),
        ({"subject_id": "alice", "text": "x"}, "project_id"),
    ],
)
def test_invalid_fact_is_refused_with_its_field(api, payload, field):
    response = api.post("/v1/facts", payload, format="json")
    assert response.status_code == 400
    assert error_code(response) == "invalid_request"
    assert field in {e["field"] for e in response.json()["error"]["details"]["errors"]}
    assert Fact.objects.count() == 0


def test_batch_size_limits(api):
    assert api.post("/v1/facts", {"facts": []}, format="json").status_code == 400
    response = api.post("/v1/facts", {"facts": [fact(f"Fact {i}.") for i in range(501)]}, format="json")
    assert response.status_code == 400 and error_code(response) == "invalid_request"


def test_source_event_must_be_in_the_same_scope(api):
    own = EventFactory(subject_id="alice")
    foreign = EventFactory(subject_id="bob")
    ok = post_fact(api, "Alice moved to Porto after the wedding.", source_event_id=str(own.id))
    assert ok["source_event_id"] == str(own.id)
    response = api.post(
        "/v1/facts",
        {"facts": [fact("Alice sold her car."), fact("Alice bought a boat.", source_event_id=str(foreign.id))]},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["error"]["details"]["errors"] == [
        {"index": 1, "field": "source_event_id", "message": "no event with this id in the fact's scope"}
    ]
    assert Fact.objects.count() == 1


# --- de-duplication -----------------------------------------------------------------------------------


def test_same_normalised_text_is_deduplicated_and_reconfirmed(api):
    first = post_fact(api, "Alice plays the cello.")
    second = post_fact(api, "  alice PLAYS the   cello!! ")
    assert second["deduplicated"] is True and second["id"] == first["id"]
    assert second["last_confirmed_at"] > first["last_confirmed_at"]
    assert Fact.objects.count() == 1


def test_duplicates_inside_one_batch(api):
    response = api.post(
        "/v1/facts", {"facts": [fact("Alice plays the cello."), fact("alice plays the cello")]}, format="json"
    )
    first, second = response.json()["facts"]
    assert second["id"] == first["id"] and second["deduplicated"] is True and first["deduplicated"] is False
    assert Fact.objects.count() == 1


def test_near_duplicate_is_not_stored_twice(api):
    first = post_fact(api, NANTES)
    again = post_fact(api, NANTES.replace("Paul lives", "Paul now lives"))
    assert again["deduplicated"] is True and again["id"] == first["id"]


def test_same_text_in_another_subject_is_another_fact(api):
    assert post_fact(api, "Likes tea.")["id"] != post_fact(api, "Likes tea.", subject_id="bob")["id"]


@pytest.mark.django_db(transaction=True)
def test_concurrent_identical_writes_make_one_row():
    barrier = threading.Barrier(2)
    results, errors = [], []

    def write():
        try:
            barrier.wait()
            results.append(fact_create(actor="test", project_id=PROJECT, subject_id="alice", text="Alice keeps bees."))
        except Exception as exc:  # surfaced by the assertion below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=write) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert Fact.objects.filter(text="Alice keeps bees.").count() == 1
    assert sorted(r.deduplicated for r in results) == [False, True]
    assert len({r.fact.id for r in results}) == 1
    connections.close_all()


# --- conflicts ----------------------------------------------------------------------------------------


def test_contradiction_opens_a_conflict_set(api):
    nantes = post_fact(api, NANTES)
    bordeaux = post_fact(api, BORDEAUX)
    assert bordeaux["deduplicated"] is False and bordeaux["conflict_set_id"]
    listed = api.get(f"/v1/conflicts?project_id={PROJECT}&subject_id=alice&status=open").json()["conflicts"]
    assert [c["id"] for c in listed] == [bordeaux["conflict_set_id"]]
    assert listed[0]["signal"] == "different_value"
    assert listed[0]["reading"]["attribute"] == "residence" and len(listed[0]["reading"]["values"]) == 2
    detail = api.get(f"/v1/conflicts/{bordeaux['conflict_set_id']}").json()
    members = {m["fact_id"]: m for m in detail["members"]}
    assert set(members) == {nantes["id"], bordeaux["id"]}
    assert members[nantes["id"]]["similarity_to"][bordeaux["id"]] >= 0.75
    assert all(f.status == "active" for f in Fact.objects.all())


def test_a_third_contradiction_joins_the_open_set(api):
    post_fact(api, NANTES)
    set_id = post_fact(api, BORDEAUX)["conflict_set_id"]
    lille = post_fact(api, LILLE)
    assert lille["conflict_set_id"] == set_id
    assert ConflictSet.objects.count() == 1
    assert ConflictSet.objects.get().members.count() == 3


def test_a_batch_is_checked_against_itself_within_each_scope(api):
    # given one batch: a fact, one contradicting it, a repeat of the second, and the second in another subject
    body = {"facts": [fact(NANTES), fact(BORDEAUX), fact(BORDEAUX.upper()), fact(BORDEAUX, subject="bob")]}
    # when
    response = api.post("/v1/facts", body, format="json")
    # then the second opens a set with the first; the repeat answers with the second and reports its set
    assert response.status_code == 201
    nantes, bordeaux, repeat, other_subject = response.json()["facts"]
    assert nantes["conflict_set_id"] is None and not nantes["deduplicated"]
    assert bordeaux["conflict_set_id"] and not bordeaux["deduplicated"]
    assert (
        repeat["deduplicated"]
        and repeat["id"] == bordeaux["id"]
        and repeat["conflict_set_id"] == bordeaux["conflict_set_id"]
    )
    assert set(ConflictSet.objects.get().members.values_list("fact_id", flat=True)) == {
        Fact.objects.get(text=NANTES).id,
        Fact.objects.get(text=BORDEAUX, subject_id="alice").id,
    }
    # and the other subject's fact was compared with nothing of alice's
    assert not other_subject["deduplicated"] and other_subject["conflict_set_id"] is None


def test_a_fact_contradicting_members_of_two_open_sets_joins_both_and_merges_neither(db):
    """Pairwise membership: a set holds facts that each contradict one of its members. A fact that
    contradicts one member of each of two sets joins both; the two sets' other members, which contradict
    nothing of each other, stay apart."""
    from facts.text import Signal

    a, b, c, d, bridge, loose = (FactFactory(text=f"Paul fact {n}.") for n in "abcdef")
    now = timezone.now()
    signal = Signal("different_name", "test")
    # Each in the write's transaction, as facts.writes calls it (a committed test has none around it).
    with transaction.atomic():
        first = conflict_record(b, [(a.id, 0.9, signal)], actor="test", policy="curator", now=now)
    with transaction.atomic():
        second = conflict_record(
            d, [(c.id, 0.9, signal)], actor="test", policy="curator", now=now + timezone.timedelta(seconds=1)
        )
    assert first.id != second.id
    with transaction.atomic():
        joined = conflict_record(
            bridge,
            [(a.id, 0.9, signal), (c.id, 0.9, signal), (loose.id, 0.8, signal)],
            actor="test",
            policy="curator",
            now=now + timezone.timedelta(seconds=2),
        )
    assert joined.id == first.id  # the oldest set is the one the write reports
    assert ConflictSet.objects.filter(status="open").count() == 2
    assert set(first.members.values_list("fact_id", flat=True)) == {a.id, b.id, bridge.id, loose.id}
    assert set(second.members.values_list("fact_id", flat=True)) == {c.id, d.id, bridge.id}


def test_resolve_by_keeping_one(api):
    nantes = post_fact(api, NANTES)
    bordeaux = post_fact(api, BORDEAUX)
    set_id = bordeaux["conflict_set_id"]
    response = api.post(
        f"/v1/conflicts/{set_id}/resolve", {"keep": [bordeaux["id"]], "note": "moved in May"}, format="json"
    )
    assert response.status_code == 200
    body = response.json()
    assert (
        body["status"] == "resolved" and body["note"] == "moved in May" and body["resolved_by"].startswith("api_key:")
    )
    old = Fact.objects.get(id=nantes["id"])
    assert old.status == "superseded" and str(old.superseded_by_id) == bordeaux["id"] and old.recorded_to
    assert {m["fact_id"]: m["kept"] for m in body["members"]} == {nantes["id"]: False, bordeaux["id"]: True}
    again = api.post(f"/v1/conflicts/{set_id}/resolve", {"dismiss": True}, format="json")
    assert again.status_code == 409 and error_code(again) == "conflict_not_open"


def test_dismiss_keeps_every_member_active(api):
    post_fact(api, NANTES)
    set_id = post_fact(api, BORDEAUX)["conflict_set_id"]
    body = api.post(f"/v1/conflicts/{set_id}/resolve", {"dismiss": True, "note": "two homes"}, format="json").json()
    assert body["status"] == "dismissed"
    assert set(Fact.objects.values_list("status", flat=True)) == {"active"}


@pytest.mark.parametrize(
    "payload",
    [
        {},
        {"keep": [], "note": "x"},
        {"keep": ["00000000-0000-4000-8000-000000000000"]},
        {"dismiss": True, "keep": ["00000000-0000-4000-8000-000000000000"]},
    ],
)
def test_resolve_needs_one_valid_decision(api, payload):
    post_fact(api, NANTES)
    set_id = post_fact(api, BORDEAUX)["conflict_set_id"]
    response = api.post(f"/v1/conflicts/{set_id}/resolve", payload, format="json")
    assert response.status_code == 400 and error_code(response) == "invalid_request"
    assert ConflictSet.objects.get().status == "open"


def test_unknown_conflict_is_404(api):
    response = api.get("/v1/conflicts/00000000-0000-4000-8000-000000000000")
    assert response.status_code == 404 and error_code(response) == "not_found"


def test_newest_wins_policy_supersedes_at_once(api, settings):
    settings.HAKI_CONFLICT_POLICY = "newest_wins"
    nantes = post_fact(api, NANTES)
    bordeaux = post_fact(api, BORDEAUX)
    conflict = ConflictSet.objects.get(id=bordeaux["conflict_set_id"])
    assert conflict.status == "resolved" and conflict.resolved_by == "system:newest_wins"
    old = Fact.objects.get(id=nantes["id"])
    assert old.status == "superseded" and str(old.superseded_by_id) == bordeaux["id"]


# --- PATCH, history, retraction ------------------------------------------------------------------------


def test_patch_text_creates_a_new_version(api):
    v1 = post_fact(api, "Alice works at the bakery.", category="work", importance=0.7)
    response = api.patch(f"/v1/facts/{v1['id']}", {"text": "Alice works at the town library."}, format="json")
    assert response.status_code == 200
    v2 = response.json()
    assert v2["id"] != v1["id"] and v2["category"] == "work" and v2["importance"] == 0.7
    old = api.get(f"/v1/facts/{v1['id']}").json()
    assert old["status"] == "superseded" and old["superseded_by"] == v2["id"] and old["recorded_to"]
    history = api.get(f"/v1/facts/{v1['id']}/history").json()["versions"]
    assert [v["id"] for v in history] == [v1["id"], v2["id"]]
    assert [v["id"] for v in api.get(f"/v1/facts/{v2['id']}/history").json()["versions"]] == [v1["id"], v2["id"]]


def test_patch_other_fields_edits_in_place(api):
    v1 = post_fact(api, "Alice works at the bakery.")
    body = api.patch(
        f"/v1/facts/{v1['id']}",
        {"importance": 0.2, "metadata": {"k": 1}, "valid_to": "2030-01-01T00:00:00Z"},
        format="json",
    ).json()
    assert body["id"] == v1["id"] and body["importance"] == 0.2 and body["metadata"] == {"k": 1}
    assert body["valid_to"] == "2030-01-01T00:00:00Z"
    assert Fact.objects.count() == 1


@pytest.mark.parametrize(
    "payload", [{}, {"project_id": "other"}, {"kind": "preference"}, {"importance": "0.3"}, {"valid_to": "2030-01-01"}]
)
def test_patch_refuses_what_cannot_change(api, payload):
    v1 = post_fact(api, "Alice works at the bakery.")
    response = api.patch(f"/v1/facts/{v1['id']}", payload, format="json")
    assert response.status_code == 400 and error_code(response) == "invalid_request"


def test_retract_then_nothing_more(api):
    v1 = post_fact(api, "Alice works at the bakery.")
    body = api.delete(f"/v1/facts/{v1['id']}").json()
    assert body["status"] == "retracted" and body["recorded_to"]
    assert api.delete(f"/v1/facts/{v1['id']}").json()["recorded_to"] == body["recorded_to"]  # idempotent
    response = api.patch(f"/v1/facts/{v1['id']}", {"text": "Alice works nowhere."}, format="json")
    assert response.status_code == 409 and error_code(response) == "fact_not_active"


def test_unknown_fact_is_404(api):
    response = api.get("/v1/facts/00000000-0000-4000-8000-000000000000")
    assert response.status_code == 404 and error_code(response) == "not_found"


# --- listing ------------------------------------------------------------------------------------------


def _list(api, **params):
    query = "&".join(f"{k}={v}" for k, v in {"project_id": PROJECT, "subject_id": "alice", **params}.items())
    response = api.get(f"/v1/facts?{query}")
    assert response.status_code == 200, response.content
    return response.json()


def test_keyset_pages_have_no_duplicates_or_gaps_under_concurrent_inserts(api):
    originals = {FactFactory(text=f"Alice note {i}.").id for i in range(7)}
    seen = []
    page = _list(api, limit=3)
    while True:
        seen += [f["id"] for f in page["facts"]]
        FactFactory(text=f"Alice wrote something new {len(seen)}.")  # lands before the cursor: never on a later page
        if not page["next_cursor"]:
            break
        page = _list(api, limit=3, cursor=page["next_cursor"])
    assert len(seen) == len(set(seen)) == 7
    assert {str(i) for i in originals} == set(seen)


def test_list_filters(api):
    FactFactory(text="A health note.", category="health")
    FactFactory(text="A work note.", category="work", kind="preference")
    FactFactory(text="Old note.", status="retracted", recorded_to=timezone.now())
    assert [f["text"] for f in _list(api, category="health")["facts"]] == ["A health note."]
    assert [f["text"] for f in _list(api, kind="preference")["facts"]] == ["A work note."]
    assert [f["text"] for f in _list(api, status="retracted")["facts"]] == ["Old note."]
    assert len(_list(api)["facts"]) == 3
    future = (timezone.now() + timezone.timedelta(days=1)).isoformat().replace("+00:00", "Z")
    assert _list(api, recorded_after=future)["facts"] == []


@pytest.mark.parametrize(
    "params",
    [
        {"limit": 0},
        {"limit": 201},
        {"cursor": "garbage"},
        {"status": "lost"},
        {"recorded_after": "2024-01-01T00:00:00"},
    ],
)
def test_list_refuses_bad_parameters(api, params):
    query = "&".join(f"{k}={v}" for k, v in {"project_id": PROJECT, "subject_id": "alice", **params}.items())
    response = api.get(f"/v1/facts?{query}")
    assert response.status_code == 400 and error_code(response) == "invalid_request"


# --- events -------------------------------------------------------------------------------------------


def test_events_create_and_page_by_occurrence(api):
    body = {
        "events": [
            {
                "project_id": PROJECT,
                "subject_id": "alice",
                "text": f"Event {i}.",
                "occurred_at": f"2026-0{i + 1}-01T10:00:00Z",
            }
            for i in range(5)
        ]
    }
    assert api.post("/v1/events", body, format="json").status_code == 201
    first = api.get(f"/v1/events?project_id={PROJECT}&subject_id=alice&limit=2").json()
    assert [e["text"] for e in first["events"]] == ["Event 4.", "Event 3."]
    second = api.get(f"/v1/events?project_id={PROJECT}&subject_id=alice&limit=2&cursor={first['next_cursor']}").json()
    assert [e["text"] for e in second["events"]] == ["Event 2.", "Event 1."]


def test_event_needs_an_aware_date(api):
    response = api.post(
        "/v1/events",
        {"project_id": PROJECT, "subject_id": "alice", "text": "Party.", "occurred_at": "2026-01-01 10:00"},
        format="json",
    )
    assert response.status_code == 400 and error_code(response) == "invalid_request"
    assert Event.objects.count() == 0


# --- erasure ------------------------------------------------------------------------------------------


def test_erasing_a_subject_leaves_nothing(api):
    post_fact(api, NANTES, subject_id="zoe-42")
    post_fact(api, BORDEAUX, subject_id="zoe-42")  # opens a conflict set
    api.post(
        "/v1/events",
        {
            "project_id": PROJECT,
            "subject_id": "zoe-42",
            "text": "Zoe's secret party.",
            "occurred_at": "2026-01-01T10:00:00Z",
        },
        format="json",
    )
    api.post(
        "/v1/context", {"project_id": PROJECT, "subject_id": "zoe-42", "query": "Where does Paul live?"}, format="json"
    )
    post_fact(api, "Bob keeps his own facts.", subject_id="bob")
    # her own identity block and procedure, and the project's, which stay
    for subject in ("zoe-42", None):
        scope = {"project_id": PROJECT, **({"subject_id": subject} if subject else {})}
        assert (
            api.post(
                "/v1/identity-blocks",
                {**scope, "name": f"tone of {subject}", "text": f"Zoe's tone {subject}."},
                format="json",
            ).status_code
            == 201
        )
        assert (
            api.post(
                "/v1/procedures", {**scope, "title": f"Zoe's reports {subject}", "text": "Short ones."}, format="json"
            ).status_code
            == 201
        )
    ids = [str(i) for i in Fact.objects.filter(subject_id="zoe-42").values_list("id", flat=True)]
    decisions = Decision.objects.filter(trace__subject_id="zoe-42").count()
    accesses = ItemAccess.objects.filter(subject_id="zoe-42").count()  # the episode served
    assert decisions >= 3 and accesses >= 1 and rows_mentioning("zoe-42")

    response = api.delete(f"/v1/subjects/zoe-42?project_id={PROJECT}")
    assert response.status_code == 200
    deleted = response.json()["deleted"]
    assert deleted == {
        "decisions": decisions,
        "traces": 1,
        "item_accesses": accesses,
        "conflict_members": 2,
        "conflict_sets": 1,
        "facts": 2,
        "extraction_jobs": 0,
        "events": 1,
        "admin_log_entries": 0,
        "scope_graphs": 0,
        "consents": 0,
        "identity_blocks": 1,
        "procedures": 1,
        "scope_words": 0,
        "scope_word_counts": 0,
        "scope_writes": 0 if ON_CITUS else 1,  # Citus: the scope-write triggers are dropped (docs/scaling.md)
        "stats_subject_days": 0,
        "stats_fact_days": 0,
    }
    for needle in ["zoe-42", "Zoe's secret party", "Bordeaux", *ids]:
        assert rows_mentioning(needle) == {}, needle
    assert rows_mentioning("Zoe's tone None") == {"facts_identityblock": 1}
    assert rows_mentioning("Zoe's reports None") == {"facts_procedure": 1}
    assert Fact.objects.filter(subject_id="bob").count() == 1


def test_erase_needs_the_project(api):
    response = api.delete("/v1/subjects/zoe")
    assert response.status_code == 400 and error_code(response) == "invalid_request"


# --- query counts on the hot paths: the same at two data sizes -------------------------------------------


def _version_chain(length: int) -> list[Fact]:
    """`length` versions of one fact, oldest first, each superseded by the next."""
    now = timezone.now()
    chain = [FactFactory(text=f"Alice lives at address number {length}.", recorded_from=now)]
    for i in range(length - 1, 0, -1):
        chain.insert(
            0,
            FactFactory(
                text=f"Alice lives at address number {i}.",
                status="superseded",
                superseded_by=chain[0],
                recorded_from=now - timedelta(days=length - i),
                recorded_to=now - timedelta(days=length - i - 1),
            ),
        )
    return chain


@pytest.mark.parametrize("length", [1, 6])
def test_history_is_one_query_whatever_its_length(api, django_assert_num_queries, length):
    chain = _version_chain(length)
    with django_assert_num_queries(2 + REQUEST_OVERHEAD_QUERIES):  # the fact, its chain
        response = api.get(f"/v1/facts/{chain[length // 2].id}/history")
    assert [v["id"] for v in response.json()["versions"]] == [str(f.id) for f in chain]


def test_history_goes_back_through_the_first_recorded_of_several_superseded_facts(api):
    # given a conflict resolved by keeping the newest of three facts: the two others are superseded by it
    now = timezone.now()
    kept = FactFactory(text="Paul lives in Lille.", recorded_from=now)
    older, newer = (
        FactFactory(
            text=text,
            status="superseded",
            superseded_by=kept,
            recorded_from=now - timedelta(days=days),
            recorded_to=now,
        )
        for text, days in (("Paul lives in Nantes.", 2), ("Paul lives in Bordeaux.", 1))
    )
    # when / then
    assert [v["id"] for v in api.get(f"/v1/facts/{kept.id}/history").json()["versions"]] == [
        str(older.id),
        str(kept.id),
    ]
    assert [v["id"] for v in api.get(f"/v1/facts/{newer.id}/history").json()["versions"]] == [
        str(newer.id),
        str(kept.id),
    ]


@pytest.mark.parametrize("stored", [3, 60])
def test_listing_facts_is_two_queries_whatever_the_scope_holds(api, django_assert_num_queries, stored):
    FactFactory.create_batch(stored)
    with django_assert_num_queries(1 + REQUEST_OVERHEAD_QUERIES):  # the page
        body = _list(api)
    assert len(body["facts"]) == min(stored, 50)


@pytest.mark.parametrize("batch", [1, 20])
def test_storing_facts_is_a_fixed_number_of_queries_whatever_the_batch(api, django_assert_num_queries, batch):
    FactFactory.create_batch(5)
    # facts unlike each other and the stored ones: no duplicate, no conflict (each of those costs its own writes)
    items = [fact(" ".join(f"word{n}x{k}" for k in range(3)) + ".") for n in range(batch)]
    # a savepoint, the scope's lock, the project's settings, the same-text lookup, two SET LOCALs and the neighbours
    # of the whole batch, one INSERT, the savepoint's release
    with django_assert_num_queries(9 + REQUEST_OVERHEAD_QUERIES):
        response = api.post("/v1/facts", {"facts": items}, format="json")
    assert response.status_code == 201
    assert not any(f["deduplicated"] or f["conflict_set_id"] for f in response.json()["facts"])


def test_facts_whose_vector_cosine_cannot_rank_are_compared_by_text_only(api, caplog):
    # the hashing embedder gives punctuation and emoji no token: an all-zero vector, whose cosine distance to
    # anything is NaN
    first = post_fact(api, "!!! ???")
    second = post_fact(api, "🙂🙂")
    repeat = post_fact(api, "!!! ???")
    assert first["id"] != second["id"] and not second["deduplicated"] and second["conflict_set_id"] is None
    assert repeat["deduplicated"] and repeat["id"] == first["id"]
    assert not ConflictSet.objects.exists()
    assert "degenerate vector" in caplog.text
