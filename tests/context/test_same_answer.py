"""Same memory, same answer (issue 35, item 11): a context call's packet is a function of the stored memory and the
call, whichever worker answers it and in an exported and imported copy of the scope."""

import copy
import io
import json
import re
import uuid
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from context import retrieval
from facts.events import EventInput, event_create_batch
from facts.writes import FactInput, fact_create_batch
from privacy.services import subject_erase
from traces.models import Trace
from tests.conftest import OTHER_PROJECT, PROJECT, make_client

pytestmark = pytest.mark.django_db

COPY = "proj-copy"


def _served(packet: dict) -> dict:
    """What a packet serves, in its order, without what names this call or these rows (trace id, row ids)."""
    return {
        "facts": [(f["text"], f["score"], f["reason_code"]) for f in packet["facts"]],
        "episodes": [(e["text"], e["score"]) for e in packet["episodes"]],
        "rendered": packet["rendered"],
        "empty_reason": packet["empty_reason"],
    }


def _ask(client, project: str, query: str, budget: int | None = None) -> dict:
    body = {"project_id": project, "subject_id": "alice", "query": query}
    if budget is not None:
        body["budget_tokens"] = budget
    response = client.post("/v1/context", body, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def _facts(project: str, subject: str, texts: list[str]) -> None:
    fact_create_batch(items=[FactInput(project_id=project, subject_id=subject, text=t) for t in texts], actor="test")


def _analyze() -> None:
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE facts_fact")


@pytest.fixture
def analyzed_facts(db):
    """The table's row estimate (pg_class.reltuples) is written in place by ANALYZE and would outlive the test's
    transaction: the teardown analyses the table again without the test's rows."""
    yield
    with connection.cursor() as cursor:
        for table in ("facts_conflictmember", "facts_conflictset", "facts_fact"):
            cursor.execute(f"DELETE FROM {table} WHERE project_id IN (%s, %s)", [PROJECT, OTHER_PROJECT])
    _analyze()


def test_two_workers_give_the_same_packet_after_the_statistics_moved(api, analyzed_facts, monkeypatch):
    # given two workers: a fresh one, and one that answered a call before the statistics moved (each process keeps
    # its own copy of the words' statistics)
    fresh = copy.deepcopy(retrieval._table_stats)
    _facts(PROJECT, "alice", ["Alice fed the wombat.", "Alice drew a pelican."])
    for i in range(2):
        _facts(PROJECT, f"filler-{i}", [f"Filler fact number {j} about gardening {i}." for j in range(500)])
    _analyze()
    first = _ask(api, PROJECT, "wombat pelican")
    worked = copy.deepcopy(retrieval._table_stats)
    # when a write from elsewhere makes the word common (another project's facts, then autovacuum's ANALYZE)
    _facts(OTHER_PROJECT, "bob", [f"Bob saw wombat number {i}." for i in range(20)])
    _analyze()
    monkeypatch.setattr(retrieval, "_table_stats", worked)
    by_worked = _ask(api, PROJECT, "wombat pelican")
    monkeypatch.setattr(retrieval, "_table_stats", fresh)
    by_fresh = _ask(api, PROJECT, "wombat pelican")
    # then both workers weigh the words as the statistics now say, and serve the same packet ...
    assert _served(by_worked) == _served(by_fresh)
    assert _served(by_worked) != _served(first)  # (the statistics did move what the call serves)
    # ... and each trace says which statistics weighed the words
    recorded = [Trace.objects.get(id=p["trace_id"]).inputs for p in (first, by_worked, by_fresh)]
    assert recorded[1]["fact_text"] == recorded[2]["fact_text"] != recorded[0]["fact_text"]
    assert recorded[1]["table_stats"] == recorded[2]["table_stats"] != recorded[0]["table_stats"]
    assert recorded[2]["table_stats"][retrieval.FACTS]["rows"] == 1022


def test_a_worker_reads_the_statistics_again_only_when_their_version_changed(db, django_assert_num_queries):
    retrieval.table_stats_refresh(PROJECT)
    # given statistics read once: a call reads their version only
    with django_assert_num_queries(1):
        version = retrieval.table_stats_refresh(PROJECT)
    # when the table is analysed, the version changes and the statistics are read again (one read a ranked table)
    _facts(PROJECT, "alice", ["Alice fed the wombat."])
    _analyze()
    with django_assert_num_queries(1 + len(retrieval.RANKED_TABLES)):
        analysed = retrieval.table_stats_refresh(PROJECT)
    assert (
        analysed != version
        and analysed.as_dict()[retrieval.FACTS]["analyses"] == version.as_dict()[retrieval.FACTS]["analyses"] + 1
    )


def test_statistics_read_just_after_an_analyze_are_read_once_more_when_it_settled(db, monkeypatch):
    # given an ANALYZE just now: ANALYZE counts itself before its transaction commits, so what a worker reads
    # then may predate it
    monkeypatch.setattr(retrieval, "STATS_SETTLE_SECONDS", 3600.0)
    _analyze()
    reads = []
    read = retrieval._read_table_stats
    monkeypatch.setattr(retrieval, "_read_table_stats", lambda table: reads.append(table) or read(table))
    young = retrieval.table_stats_refresh(PROJECT)
    retrieval.table_stats_refresh(PROJECT)
    assert not young.settled and len(reads) == len(retrieval.RANKED_TABLES)  # kept while it is young
    # when the ANALYZE is old enough, the statistics are read once more, then kept
    monkeypatch.setattr(retrieval, "STATS_SETTLE_SECONDS", 0.0)
    assert retrieval.table_stats_refresh(PROJECT) == young
    retrieval.table_stats_refresh(PROJECT)
    assert len(reads) == 2 * len(retrieval.RANKED_TABLES)


# --- an exported and imported copy --------------------------------------------------------------------------------

QUESTIONS = [
    ("Who is Alice's sister?", 90),  # served: the sister fact; multi-hop: 5 of Zoe's 12 facts, all of one batch
    ("Who is Alice's sister?", None),
    ("What did Zoe write in the red notebook?", 60),  # many equal text ranks
    ("What happened at the meeting?", 80),  # events of one moment
    ("garden", 40),
]


def _scope() -> None:
    """Alice's scope: facts written in batches (one batch, one recorded time: ties everywhere time orders rows) and
    events of one moment."""
    _facts(PROJECT, "alice", ["Alice's sister is Zoe.", "Alice tends the garden on Sundays."])
    _facts(
        PROJECT,
        "alice",
        [
            f"Zoe wrote entry {word} in the red notebook."
            for word in (
                "apple",
                "birch",
                "cedar",
                "delta",
                "ember",
                "fjord",
                "grove",
                "heron",
                "islet",
                "jetty",
                "kiosk",
                "lemon",
            )
        ],
    )
    at = timezone.now() - timedelta(days=3)
    event_create_batch(
        items=[
            EventInput(
                project_id=PROJECT,
                subject_id="alice",
                occurred_at=at,
                text=f"At the meeting Alice spoke about topic {word}.",
            )
            for word in ("oak", "elm", "ash", "fir", "yew", "pine")
        ]
    )


def _export() -> str:
    out = io.StringIO()
    call_command("export_scope", "--project", PROJECT, "--subject", "alice", stdout=out, stderr=io.StringIO())
    return out.getvalue()


def _import(tmp_path, text: str) -> None:
    path = tmp_path / "scope.jsonl"
    path.write_text(text, encoding="utf-8")
    call_command("import_jsonl", str(path), stdout=io.StringIO(), stderr=io.StringIO())


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _as_copy(text: str) -> str:
    """The export as another project's copy: every id new (the same one for each mention), the project renamed."""
    fresh: dict[str, str] = {}
    text = _UUID.sub(lambda m: fresh.setdefault(m.group(0), str(uuid.uuid4())), text)
    return "\n".join(line.replace(json.dumps(PROJECT), json.dumps(COPY)) for line in text.split("\n"))


def test_an_imported_copy_serves_the_same_items_in_the_same_order(api, tmp_path):
    # given alice's scope and its packets for questions whose candidates tie (one batch's recorded time, one moment)
    _scope()
    original = [_served(_ask(api, PROJECT, q, budget)) for q, budget in QUESTIONS]
    assert any(f[2] == "multi_hop_expansion" for f in original[0]["facts"])  # the hop chose among ties
    # when the scope is exported and imported as another project's copy (new ids, rows written in the file's order)
    _import(tmp_path, _as_copy(_export()))
    copied = [_served(_ask(make_client(COPY), COPY, q, budget)) for q, budget in QUESTIONS]
    # then every question is answered with the same items in the same order
    assert copied == original


def test_an_erased_and_imported_scope_serves_the_same_packets(api, tmp_path):
    # given alice's scope and its packets, row ids included
    _scope()
    ids = [
        [(f["id"], f["text"]) for f in packet["facts"]] + [(e["id"], e["text"]) for e in packet["episodes"]]
        for packet in (_ask(api, PROJECT, q, budget) for q, budget in QUESTIONS)
    ]
    # when it is exported, erased and imported again (the rows written in the file's order, not their first one)
    exported = _export()
    subject_erase(project_id=PROJECT, subject_id="alice")
    _import(tmp_path, exported)
    # then every question serves the same rows in the same order
    again = [
        [(f["id"], f["text"]) for f in packet["facts"]] + [(e["id"], e["text"]) for e in packet["episodes"]]
        for packet in (_ask(api, PROJECT, q, budget) for q, budget in QUESTIONS)
    ]
    assert again == ids
