"""import_jsonl into a scope that already holds memory: existing ids refused unless skipped, an active text or an
identity block name it holds refused, never more identity blocks than allowed, and the write path's scope lock
waited for."""

import uuid

import psycopg
import pytest
from django.core.management import CommandError
from django.db import connection

from facts.identity import identity_block_create
from facts.models import (
    IDENTITY_BLOCKS_PER_SCOPE,
    Fact,
    FactStatus,
    IdentityBlock,
    Procedure,
)
from facts.writes import fact_create
from portability import scope_import
from privacy.services import project_erase, subject_erase
from tests.portability.scopes import PORT, build_scope, export, import_file, write

pytestmark = pytest.mark.django_db


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
