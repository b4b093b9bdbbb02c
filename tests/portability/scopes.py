"""A scope holding every kind of memory, built for the transfer tests, and the commands run as they would be:
export_scope to records, records to a file, import_jsonl of a file."""

import io
import json
import uuid
from datetime import timedelta

import numpy as np
from django.core.management import call_command
from django.utils import timezone

from facts.models import (
    ConflictMember,
    ConflictSet,
    ConflictStatus,
    Event,
    Fact,
    FactStatus,
    ProcedureStatus,
)
from facts.text import text_hash
from hakimem.embeddings import get_embedder
from tests.facts.factories import IdentityBlockFactory, ProcedureFactory

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
