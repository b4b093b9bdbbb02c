"""manage.py export_scope and import_jsonl: moving a scope's memory between instances."""

import io
import json
import time
import uuid
from datetime import timedelta

import numpy as np
import psycopg
import pytest
from django.contrib.postgres.search import SearchQuery
from django.core.management import CommandError, call_command
from django.db import connection
from django.utils import timezone

from facts.identity import identity_block_create
from facts.models import (
    IDENTITY_BLOCKS_PER_SCOPE,
    PROJECT_WIDE,
    ConflictMember,
    ConflictSet,
    ConflictStatus,
    Event,
    Fact,
    FactStatus,
    IdentityBlock,
    Procedure,
    ProcedureStatus,
)
from facts.procedures import procedure_embedding_text
from facts.text import text_hash
from facts.writes import fact_create
from hakimem.embeddings import get_embedder
from portability import scope_import
from privacy.services import project_erase, subject_erase
from tests.conftest import make_client
from tests.facts.factories import FactFactory, IdentityBlockFactory, ProcedureFactory

pytestmark = pytest.mark.django_db

PORT = "port-x"


def build_layers(subject: str, *, project: str = PORT) -> None:
    """A scope's identity blocks (enabled and disabled, ordered by position) and procedures (active and
    retracted), with metadata and creation and update times of their own."""
    now = timezone.now().replace(microsecond=654321)
    who = subject or "the project"
    rows = [
        IdentityBlockFactory(
            project_id=project,
            subject_id=subject,
            name="persona",
            position=2,
            text=f"Speak with {who} in French.",
            metadata={"source": "onboarding ☕"},
        ),
        IdentityBlockFactory(
            project_id=project,
            subject_id=subject,
            name="old-tone",
            position=1,
            enabled=False,
            text="Use formal address.",
        ),
        ProcedureFactory(
            project_id=project,
            subject_id=subject,
            title=f"Weekly report for {who}",
            text="1. Gather the week's notes. 2. Summarise them in five lines.",
            category="work",
            importance=0.7,
            metadata={"v": 2},
        ),
        ProcedureFactory(
            project_id=project,
            subject_id=subject,
            title=f"Old weekly report for {who}",
            text="1. Print the notes.",
            status=ProcedureStatus.RETRACTED,
        ),
    ]
    for i, row in enumerate(rows):
        type(row).objects.filter(id=row.id).update(
            created_at=now - timedelta(days=10 + i, microseconds=i), updated_at=now - timedelta(days=i)
        )


def build_scope(subject: str, n_facts: int, *, project: str = PORT) -> None:
    """A subject's memory in every state export must carry: active, superseded (with its successor) and
    retracted versions, bitemporal columns, categories, kinds, metadata, facts from events, and open,
    resolved and dismissed conflict sets; identity blocks and procedures (build_layers)."""
    build_layers(subject, project=project)
    now = timezone.now().replace(microsecond=123456)
    events = [
        Event(
            project_id=project,
            subject_id=subject,
            text=f"{subject} went to gathering {i} in Nantes.",
            occurred_at=now - timedelta(days=i, microseconds=i),
            metadata={"n": i, "lieu": "café ☕"},
        )
        for i in range(max(2, n_facts // 10))
    ]
    for event, vector in zip(events, get_embedder().embed([e.text for e in events])):
        event.embedding = vector
    Event.objects.bulk_create(events)
    Event.objects.filter(project_id=project, subject_id=subject).update(recorded_at=now - timedelta(hours=1))

    texts = [f"{subject.title()} keeps note {i} about the blue bicycle number {i * 7}." for i in range(n_facts)]
    ids = [uuid.uuid4() for _ in texts]
    facts = []
    for i, (fact_id, text, vector) in enumerate(zip(ids, texts, get_embedder().embed(texts))):
        recorded = now - timedelta(minutes=n_facts - i, microseconds=i)
        fact = Fact(
            id=fact_id,
            project_id=project,
            subject_id=subject,
            text=text,
            text_hash=text_hash(text),
            embedding=vector,
            category=("health", "work", "")[i % 3],
            kind=("fact", "preference")[i % 2 == 1 and i % 4 == 1],
            importance=round((i % 11) / 10, 1),
            volatility=("permanent", "stable", "volatile")[i % 3],
            valid_from=recorded - timedelta(days=30) if i % 4 == 0 else None,
            valid_to=recorded + timedelta(days=30) if i % 8 == 0 else None,
            recorded_from=recorded,
            last_confirmed_at=recorded + timedelta(seconds=i % 5),
            source_event=events[i % len(events)] if i % 6 == 0 else None,
            metadata={"i": i, "note": "naïve"} if i % 5 == 0 else {},
        )
        if i % 10 == 0 and i + 1 < n_facts:  # an older version, replaced by the next fact
            fact.status, fact.recorded_to, fact.superseded_by_id = (
                FactStatus.SUPERSEDED,
                recorded + timedelta(minutes=1),
                ids[i + 1],
            )
        elif i % 10 == 5:
            fact.status, fact.recorded_to = FactStatus.RETRACTED, recorded + timedelta(seconds=30)
        facts.append(fact)
    Fact.objects.bulk_create(facts)

    active = [f for f in facts if f.status == FactStatus.ACTIVE]
    open_set = ConflictSet.objects.create(
        project_id=project,
        subject_id=subject,
        signal="different_number",
        signal_detail="7 / 14",
        similarity=0.8312345678901,
        opened_at=now,
        reading={"attribute": "count:children", "holder": "", "new": "7", "old": "14", "rule": "different_value"},
    )
    resolved = ConflictSet.objects.create(
        project_id=project,
        subject_id=subject,
        status=ConflictStatus.RESOLVED,
        signal="negation",
        similarity=0.9,
        opened_at=now - timedelta(days=2),
        resolved_at=now - timedelta(days=1),
        resolved_by="user:cora",
        note="Gardé la plus récente.",
    )
    dismissed = ConflictSet.objects.create(
        project_id=project,
        subject_id=subject,
        status=ConflictStatus.DISMISSED,
        signal="antonym",
        similarity=0.77,
        opened_at=now - timedelta(days=3),
        resolved_at=now - timedelta(days=3, seconds=-5),
        resolved_by="api",
    )
    ConflictMember.objects.bulk_create(
        [
            ConflictMember(project_id=open_set.project_id, conflict_set=open_set, fact=active[0], added_at=now),
            ConflictMember(
                project_id=open_set.project_id,
                conflict_set=open_set,
                fact=active[1],
                added_at=now + timedelta(seconds=1),
            ),
            ConflictMember(
                project_id=resolved.project_id,
                conflict_set=resolved,
                fact=active[2],
                added_at=now - timedelta(days=2),
                kept=True,
            ),
            ConflictMember(
                project_id=resolved.project_id,
                conflict_set=resolved,
                fact=facts[0],
                added_at=now - timedelta(days=2),
                kept=False,
            ),
            ConflictMember(
                project_id=dismissed.project_id,
                conflict_set=dismissed,
                fact=active[3],
                added_at=now - timedelta(days=3),
            ),
            ConflictMember(
                project_id=dismissed.project_id,
                conflict_set=dismissed,
                fact=active[4],
                added_at=now - timedelta(days=3),
            ),
        ]
    )


def export(*args) -> list[dict]:
    out, err = io.StringIO(), io.StringIO()
    call_command("export_scope", *args, stdout=out, stderr=err)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def write(path, records: list[dict]) -> str:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return str(path)


def import_file(path, *args) -> str:
    out = io.StringIO()
    call_command("import_jsonl", str(path), *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def comparable(records: list[dict]) -> tuple[dict, list[str]]:
    header = {k: v for k, v in records[0].items() if k != "exported_at"}
    return header, sorted(json.dumps(r, sort_keys=True) for r in records[1:])


def vector_of(model, row_id) -> np.ndarray:
    return model.objects.values_list("embedding", flat=True).get(id=row_id).to_numpy().astype(np.float32)


# --- round trip -------------------------------------------------------------------------------------------


def test_export_erase_import_export_gives_the_same_records(tmp_path):
    # given a project of three subjects, 3,000 facts in every state, their events and conflict sets, and
    # another project's fact
    # and the project's own identity blocks and procedures
    for subject, size in (("alice", 1500), ("bob", 1000), ("carol", 500)):
        build_scope(subject, size)
    build_layers(PROJECT_WIDE)
    elsewhere = FactFactory(project_id="other-project", subject_id="alice")
    # when it is exported, erased, imported and exported again
    started = time.perf_counter()
    first = export("--project", PORT)
    exported = time.perf_counter()
    project_erase(project_id=PORT)
    assert not Fact.objects.filter(project_id=PORT).exists()
    path = write(tmp_path / "port.jsonl", first)
    before_import = time.perf_counter()
    summary = import_file(path)
    imported = time.perf_counter()
    second = export("--project", PORT)
    print(f"\n3,000 facts: export {exported - started:.2f} s, import {imported - before_import:.2f} s")
    # then the records are the same, ids included, and nothing else moved
    assert comparable(second) == comparable(first)
    header = first[0]
    assert header["counts"] == {"events": 300, "facts": 3000, "conflict_sets": 9, "identity_blocks": 8, "procedures": 8}
    assert header["embedding"] == {"provider": "hashing", "model": "words+trigrams/crc32", "dimension": 384}
    kinds = [r["type"] for r in first[1:]]
    assert kinds.count("fact") == 3000 and kinds.count("event") == 300 and kinds.count("conflict_set") == 9
    assert kinds.count("identity_block") == 8 and kinds.count("procedure") == 8
    assert first[1]["subject_id"] == PROJECT_WIDE  # the project's own come first
    assert {r["status"] for r in first if r["type"] == "procedure"} == {"active", "retracted"}
    assert {r["enabled"] for r in first if r["type"] == "identity_block"} == {True, False}
    statuses = {r["status"] for r in first if r["type"] == "fact"}
    assert statuses == {"active", "superseded", "retracted"}
    assert {r["status"] for r in first if r["type"] == "conflict_set"} == {"open", "resolved", "dismissed"}
    assert "imported 3000 facts, 300 events, 9 conflict sets, 8 identity blocks, 8 procedures in 4 scopes" in summary
    assert Fact.objects.get(id=elsewhere.id).text == elsewhere.text
    # and the imported store works: the facts are searchable and a superseded chain holds
    superseded = Fact.objects.filter(project_id=PORT, status=FactStatus.SUPERSEDED).first()
    assert superseded.superseded_by.status == FactStatus.ACTIVE
    assert Fact.objects.filter(project_id=PORT, search_vector=SearchQuery("bicycle", config="simple")).count() == 3000
    # and a tiered context call serves alice's enabled blocks and the project's, by position, and her active
    # procedures and the project's, never a retracted one
    response = make_client(PORT).post(
        "/v1/context",
        {"project_id": PORT, "subject_id": "alice", "tiers": True, "query": "write the weekly report"},
        format="json",
    )
    assert response.status_code == 200, response.content
    packet = response.json()
    served_blocks = {(b["id"], b["text"]) for b in packet["identity"]}
    assert served_blocks == {
        (str(b.id), b.text)
        for b in IdentityBlock.objects.filter(project_id=PORT, subject_id__in=["alice", PROJECT_WIDE], enabled=True)
    }
    assert {p["title"] for p in packet["procedures"]} == {"Weekly report for alice", "Weekly report for the project"}


def test_one_subject_exports_grouped_by_kind_and_alone(tmp_path):
    # given two subjects and the project's own blocks and procedures
    build_scope("alice", 30)
    build_scope("bob", 20)
    build_layers(PROJECT_WIDE)
    # when one is exported
    records = export("--project", PORT, "--subject", "bob")
    # then only its records come, events before facts, conflict sets, identity blocks, procedures, no vector
    assert records[0]["scope"] == {"project_id": PORT, "subject_id": "bob"}
    assert {r["subject_id"] for r in records[1:]} == {"bob"}
    kinds = [r["type"] for r in records[1:]]
    assert kinds == sorted(kinds, key=["event", "fact", "conflict_set", "identity_block", "procedure"].index)
    assert kinds.count("identity_block") == 2 and kinds.count("procedure") == 2
    assert records[0]["with_embeddings"] is False and not any("embedding" in r for r in records[1:])


def test_vectors_in_the_file_are_kept_only_from_the_same_embedder_and_of_the_right_size(tmp_path):
    # given a subject whose first fact carries a vector its text would not give (a model's own, say)
    build_scope("alice", 12)
    odd, other, short = Fact.objects.filter(project_id=PORT).order_by("recorded_from")[:3]
    # and a procedure with such a vector too
    odd_vector = get_embedder().embed(["something else entirely"])[0]
    Fact.objects.filter(id=odd.id).update(embedding=odd_vector)
    procedure = Procedure.objects.get(project_id=PORT, status=ProcedureStatus.ACTIVE)
    Procedure.objects.filter(id=procedure.id).update(embedding=odd_vector)
    records = export("--project", PORT, "--with-embeddings")
    project_erase(project_id=PORT)
    by_id = {r["id"]: r for r in records[1:]}
    by_id[str(short.id)]["embedding"] = by_id[str(short.id)]["embedding"][:100]  # the wrong size
    # when imported with the same embedder named in the header
    summary = import_file(write(tmp_path / "same.jsonl", records))
    # then the file's vectors are kept, and the one of the wrong size is computed again
    assert np.allclose(vector_of(Fact, odd.id), odd_vector, atol=1e-3)
    assert np.allclose(vector_of(Fact, short.id), get_embedder().embed([short.text])[0], atol=1e-3)
    assert np.allclose(vector_of(Procedure, procedure.id), odd_vector, atol=1e-3)
    assert "embeddings: 15 from the file, 1 computed" in summary  # 11 facts, 2 events and 2 procedures kept
    # when the header names another embedder
    project_erase(project_id=PORT)
    records[0]["embedding"] = {"provider": "openai", "model": "text-embedding-3-small", "dimension": 384}
    summary = import_file(write(tmp_path / "other.jsonl", records))
    # then every vector is computed by the configured embedder
    assert np.allclose(vector_of(Fact, odd.id), get_embedder().embed([odd.text])[0], atol=1e-3)
    assert np.allclose(vector_of(Fact, other.id), get_embedder().embed([other.text])[0], atol=1e-3)
    assert np.allclose(
        vector_of(Procedure, procedure.id),
        get_embedder().embed([procedure_embedding_text(procedure.title, procedure.text)])[0],
        atol=1e-3,
    )
    assert "embeddings: 0 from the file, 16 computed" in summary


# --- refusals ---------------------------------------------------------------------------------------------


def _first(records, kind):
    """bob's first record of that kind: the file's second subject, after alice's valid records."""
    return next(i for i, r in enumerate(records) if r["type"] == kind and r.get("subject_id") == "bob")


# Each change spoils one record and returns its index in the list (the header is 0).
def _set(kind, field, value):
    def change(records):
        i = _first(records, kind)
        records[i][field] = value
        return i

    return change


def _drop(kind, field):
    def change(records):
        i = _first(records, kind)
        del records[i][field]
        return i

    return change


def _supersede_nothing(records):
    i = next(i for i, r in enumerate(records) if r.get("subject_id") == "bob" and r.get("status") == "superseded")
    records[i]["superseded_by"] = None
    return i


def _rename_like_the_previous_block(records):
    i = _first(records, "identity_block") + 1
    records[i]["name"] = records[i - 1]["name"]
    return i


def _header(field, value):
    def change(records):
        records[0][field] = value
        return 0

    return change


def test_a_conflict_set_keeps_what_was_read_and_an_export_without_it_imports(tmp_path):
    # given a scope whose open conflict set was read as two counts of children, exported and erased
    build_scope("alice", 20)
    records = export("--project", PORT)
    project_erase(project_id=PORT)
    sets = [r for r in records if r["type"] == "conflict_set"]
    assert {tuple(sorted(r["reading"])) for r in sets} == {(), ("attribute", "holder", "new", "old", "rule")}
    # when it is imported from a file written before sets kept their reading (no "reading" field)
    for record in sets:
        del record["reading"]
    import_file(write(tmp_path / "older.jsonl", records))
    # then every set is back, with an empty reading
    assert list(ConflictSet.objects.filter(project_id=PORT).values_list("reading", flat=True)) == [{}, {}, {}]


@pytest.mark.parametrize(
    "option, value", [("--project", "port ; drop"), ("--subject", "alice bob"), ("--project", "p" * 300)]
)
def test_export_refuses_a_scope_id_that_only_begins_like_one(option, value):
    # given an id whose first characters are valid and the rest not (a prefix match let it through)
    args = [option, value] if option == "--project" else ["--project", PORT, option, value]
    # when it is exported, then the command refuses it, naming the option and the rule
    with pytest.raises(CommandError, match=f"{option} must be 1-"):
        export(*args)


@pytest.mark.parametrize(
    "change, field, message",
    [
        (_set("fact", "importance", 2), "importance", "between 0 and 1"),
        (_set("fact", "recorded_from", "2026-01-01T10:00"), "recorded_from", "with an offset"),
        (_set("fact", "status", "forgotten"), "status", "must be one of active"),
        (_set("fact", "subject_id", "bob smith"), "subject_id", "letters, digits"),
        (_set("fact", "colour", "blue"), "colour", "unknown field"),
        (_drop("fact", "text"), "text", "missing"),
        (_set("event", "metadata", ["not", "an", "object"]), "metadata", "JSON object"),
        (_set("event", "type", "memo"), "type", "must be one of event"),
        (
            _set("conflict_set", "members", [{"fact": "nope", "added_at": "2026-01-01T00:00:00+00:00", "kept": None}]),
            "members[0].fact",
            "must be a UUID",
        ),
        (_set("conflict_set", "reading", "residence"), "reading", "JSON object"),
        (_supersede_nothing, "superseded_by", "names its successor"),
        (
            _set("event", "subject_id", ""),
            "subject_id",
            "letters, digits",
        ),  # only blocks and procedures are project-wide
        (_set("identity_block", "name", ""), "name", "1 to 100 characters"),
        (_set("identity_block", "text", "x" * 4001), "text", "1 to 4000 characters"),
        (_set("identity_block", "position", -1), "position", "an integer from 0"),
        (_set("identity_block", "position", 1.5), "position", "an integer from 0"),
        (_set("identity_block", "enabled", "yes"), "enabled", "true or false"),
        (_drop("identity_block", "created_at"), "created_at", "missing"),
        (_rename_like_the_previous_block, "name", "earlier in the file has this name"),
        (_set("procedure", "status", "deleted"), "status", "must be one of active, retracted"),
        (_set("procedure", "title", "t" * 201), "title", "1 to 200 characters"),
        (_set("procedure", "importance", -0.5), "importance", "between 0 and 1"),
        (_set("procedure", "embedding", ["a"]), "embedding", "list of finite numbers"),
        (_drop("procedure", "updated_at"), "updated_at", "missing"),
        (_header("version", 2), "version", "not supported"),
    ],
)
def test_a_bad_line_is_reported_with_its_number_and_field_and_nothing_is_written(tmp_path, change, field, message):
    # given an export of two subjects, erased, with one of the second subject's records spoiled (the first
    # subject's records, before it, are valid)
    build_scope("alice", 20)
    build_scope("bob", 20)
    records = export("--project", PORT)
    project_erase(project_id=PORT)
    assert records[1]["subject_id"] == "alice"
    line = change(records) + 1
    # when it is imported
    with pytest.raises(CommandError) as refused:
        import_file(write(tmp_path / "bad.jsonl", records))
    # then the error names the line and the field, and no scope was written
    assert f"line {line} field {field!r}: " in str(refused.value) and message in str(refused.value)
    assert "Nothing was written" in str(refused.value)
    assert not Fact.objects.exists() and not Event.objects.exists() and not ConflictSet.objects.exists()
    assert not IdentityBlock.objects.exists() and not Procedure.objects.exists()


def test_a_line_that_is_not_json_or_a_truncated_file_is_refused(tmp_path):
    # given an export
    build_scope("alice", 20)
    records = export("--project", PORT)
    project_erase(project_id=PORT)
    lines = write(tmp_path / "x.jsonl", records)
    text = (tmp_path / "x.jsonl").read_text(encoding="utf-8").splitlines()
    # when a line is cut in the middle
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join(text[:5] + [text[5][:40]] + text[6:]) + "\n", encoding="utf-8")
    with pytest.raises(CommandError, match=r"line 6: not a JSON line"):
        import_file(broken)
    # when the file lost its last lines
    truncated = tmp_path / "truncated.jsonl"
    truncated.write_text("\n".join(text[:-3]) + "\n", encoding="utf-8")
    with pytest.raises(CommandError, match=r"line 1 field 'counts': the header announces"):
        import_file(truncated)
    # then nothing was written
    assert lines and not Fact.objects.exists() and not Event.objects.exists()


def test_a_reference_leading_nowhere_rolls_back_its_scope_only(tmp_path):
    # given two subjects' export where bob's superseded fact names a successor that is in no file or table
    build_scope("alice", 20)
    build_scope("bob", 20)
    records = export("--project", PORT)
    project_erase(project_id=PORT)
    i = next(i for i, r in enumerate(records) if r.get("subject_id") == "bob" and r.get("status") == "superseded")
    records[i]["superseded_by"] = str(uuid.uuid4())
    # when imported
    with pytest.raises(CommandError) as refused:
        import_file(write(tmp_path / "dangling.jsonl", records))
    # then the line and field are named, bob is rolled back, alice (before it) is in
    assert f"line {i + 1} field 'superseded_by'" in str(refused.value)
    assert f"Scope {PORT}/bob was rolled back; the 1 scopes before it were imported" in str(refused.value)
    assert not Fact.objects.filter(subject_id="bob").exists() and not Event.objects.filter(subject_id="bob").exists()
    assert Fact.objects.filter(subject_id="alice").count() == 20


def test_scattered_scopes_are_refused(tmp_path):
    # given a file where a subject's records come back after another subject's
    build_scope("alice", 10)
    build_scope("bob", 10)
    records = export("--project", PORT)
    project_erase(project_id=PORT)
    last_alice = max(i for i, r in enumerate(records) if r.get("subject_id") == "alice")
    records.append(records.pop(last_alice))
    # when imported, then refused at the returning line, with nothing written
    with pytest.raises(
        CommandError, match=rf"line {len(records)} field 'subject_id': scope {PORT}/alice appeared earlier"
    ):
        import_file(write(tmp_path / "scattered.jsonl", records))
    assert not Fact.objects.exists()


# --- ids that exist ---------------------------------------------------------------------------------------


def test_existing_ids_are_refused_unless_skipped(tmp_path):
    # given a project exported, then one subject erased and one of the other's facts edited
    build_scope("alice", 20)
    build_scope("bob", 20)
    path = write(tmp_path / "port.jsonl", export("--project", PORT))
    subject_erase(project_id=PORT, subject_id="bob")
    edited = Fact.objects.filter(subject_id="alice", status=FactStatus.ACTIVE).first()
    Fact.objects.filter(id=edited.id).update(category="edited-here")
    edited_block = IdentityBlock.objects.filter(subject_id="alice").first()
    IdentityBlock.objects.filter(id=edited_block.id).update(text="Edited here.")
    # when the file is imported: refused at alice's first event, which exists
    with pytest.raises(CommandError, match=r"line 2 field 'id': an event with id .* exists already \(--skip-existing"):
        import_file(path)
    assert not Fact.objects.filter(subject_id="bob").exists()
    # when imported with --skip-existing
    summary = import_file(path, "--skip-existing")
    # then bob comes back, alice's rows are left as they are
    assert "imported 20 facts, 2 events, 3 conflict sets, 2 identity blocks, 2 procedures in 2 scopes" in summary
    assert "skipped existing: 20 facts, 2 events, 3 conflict sets, 2 identity blocks, 2 procedures" in summary
    assert Fact.objects.filter(subject_id="bob").count() == 20
    assert (
        IdentityBlock.objects.filter(subject_id="bob").count()
        == Procedure.objects.filter(subject_id="bob").count()
        == 2
    )
    assert Fact.objects.get(id=edited.id).category == "edited-here"
    assert IdentityBlock.objects.get(id=edited_block.id).text == "Edited here."
    # and a second run skips everything
    assert "imported 0 facts, 0 events, 0 conflict sets, 0 identity blocks, 0 procedures" in import_file(
        path, "--skip-existing"
    )


def test_an_active_text_the_scope_already_holds_is_refused(tmp_path):
    # given an export, erased, and the API writing one of its active texts again meanwhile
    build_scope("alice", 20)
    records = export("--project", PORT)
    project_erase(project_id=PORT)
    i = next(i for i, r in enumerate(records) if r.get("status") == "active")
    fact_create(actor="test", project_id=PORT, subject_id="alice", text=records[i]["text"])
    # when imported, then refused at that line, and only the API's fact is there
    with pytest.raises(CommandError, match=rf"line {i + 1} field 'text': the scope already holds an active fact"):
        import_file(write(tmp_path / "taken.jsonl", records))
    assert Fact.objects.filter(project_id=PORT).count() == 1


def test_an_identity_block_name_its_scope_already_holds_is_refused(tmp_path):
    # given an export of alice, erased, and a block written meanwhile under the name of one in the file
    build_scope("alice", 10)
    records = export("--project", PORT)
    project_erase(project_id=PORT)
    i = next(i for i, r in enumerate(records) if r["type"] == "identity_block")
    identity_block_create(project_id=PORT, subject_id="alice", name=records[i]["name"], text="Mine.")
    # when imported, then refused at that line, and only the block written meanwhile is there
    with pytest.raises(CommandError, match=rf"line {i + 1} field 'name': the scope already holds an identity block"):
        import_file(write(tmp_path / "taken.jsonl", records))
    assert IdentityBlock.objects.get().text == "Mine." and not Fact.objects.exists()


def test_a_scope_never_ends_with_more_identity_blocks_than_allowed(tmp_path, monkeypatch):
    # given an export of alice's two blocks, erased, and all but one of the scope's places taken meanwhile
    build_scope("alice", 10)
    records = export("--project", PORT)
    project_erase(project_id=PORT)
    for n in range(IDENTITY_BLOCKS_PER_SCOPE - 1):
        identity_block_create(project_id=PORT, subject_id="alice", name=f"meanwhile-{n}", text="Hi.")
    # when imported, then refused at the block that would be one too many, with nothing written
    second = [i for i, r in enumerate(records) if r["type"] == "identity_block"][1]
    with pytest.raises(
        CommandError,
        match=rf"line {second + 1} field 'subject_id': scope {PORT}/alice would hold "
        rf"more than {IDENTITY_BLOCKS_PER_SCOPE} identity blocks",
    ):
        import_file(write(tmp_path / "full.jsonl", records))
    assert IdentityBlock.objects.count() == IDENTITY_BLOCKS_PER_SCOPE - 1 and not Fact.objects.exists()
    # and a file that holds more than allowed for an empty scope is refused the same way, counted across the
    # chunks the file is read in
    project_erase(project_id=PORT)
    monkeypatch.setattr(scope_import, "CHUNK", 7)
    block = records[second]
    many = [records[0]] + [
        {**block, "id": str(uuid.uuid4()), "name": f"b{n}"} for n in range(IDENTITY_BLOCKS_PER_SCOPE + 1)
    ]
    many[0] = {
        **many[0],
        "counts": {
            "events": 0,
            "facts": 0,
            "conflict_sets": 0,
            "identity_blocks": IDENTITY_BLOCKS_PER_SCOPE + 1,
            "procedures": 0,
        },
    }
    with pytest.raises(
        CommandError, match=rf"line {IDENTITY_BLOCKS_PER_SCOPE + 2} field 'subject_id'.*Nothing was written"
    ):
        import_file(write(tmp_path / "many.jsonl", many))
    assert not IdentityBlock.objects.exists()


def test_import_waits_for_the_scope_lock_of_the_write_path(tmp_path):
    # given an export, erased, and the advisory lock of alice's scope as fact_create takes it, held by another
    # connection
    build_scope("alice", 10)
    path = write(tmp_path / "port.jsonl", export("--project", PORT))
    project_erase(project_id=PORT)
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL lock_timeout = '200ms'")
    other = psycopg.connect(connection.connection.info.dsn)
    try:
        other.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s || chr(31) || %s, 0))", [PORT, "alice"])
        # when imported, then it waits for that lock (here: gives up after lock_timeout), writing nothing
        with pytest.raises(Exception, match="lock timeout"):
            import_file(path)
    finally:
        other.rollback()
        other.close()
    assert not Fact.objects.filter(project_id=PORT).exists()
