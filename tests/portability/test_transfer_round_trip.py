"""manage.py export_scope then import_jsonl gives back the same scope: every kind of memory, grouped by kind, its
vectors kept only when the file's embedder is the instance's."""

import time

import numpy as np
import pytest
from django.contrib.postgres.search import SearchQuery

from facts.models import (
    PROJECT_WIDE,
    Fact,
    FactStatus,
    IdentityBlock,
    Procedure,
    ProcedureStatus,
)
from facts.procedures import procedure_embedding_text
from hakimem.embeddings import get_embedder
from privacy.services import project_erase
from tests.conftest import make_client
from tests.facts.factories import FactFactory
from tests.portability.scopes import PORT, build_layers, build_scope, comparable, export, import_file, vector_of, write

pytestmark = pytest.mark.django_db


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
