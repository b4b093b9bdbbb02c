"""Procedures: how-to steps of a scope, embedded and ranked like facts, edited in place (no versions), retracted."""

from __future__ import annotations

from django.db import transaction

from facts.errors import ProcedureNotActive
from facts.locks import lock_scopes
from facts.models import Procedure, ProcedureStatus
from hakimem.embeddings import get_embedder


PROCEDURE_FIELDS = ("title", "text", "category", "importance", "metadata")


def procedure_embedding_text(title: str, text: str) -> str:
    """What a procedure's vector is computed from: the title first (an embedder that truncates keeps it), then
    the steps, as its full-text vector reads title || ' ' || text."""
    return f"{title}\n{text}"


def procedure_create(
    *,
    project_id: str,
    subject_id: str,
    title: str,
    text: str,
    category: str = "",
    importance: float = 0.5,
    metadata: dict | None = None,
) -> Procedure:
    """Embedded first, as facts are (a failing embedder refuses the write before anything is stored), then
    stored under the scope's writers' lock."""
    vector = get_embedder().embed([procedure_embedding_text(title, text)])[0]
    with transaction.atomic():
        lock_scopes([(project_id, subject_id)])
        return Procedure.objects.create(
            project_id=project_id,
            subject_id=subject_id,
            title=title,
            text=text,
            category=category,
            importance=importance,
            embedding=vector,
            metadata=metadata or {},
        )


def procedure_update(*, procedure: Procedure, changes: dict) -> Procedure:
    """Edit PROCEDURE_FIELDS in place (a procedure has no versions: its steps are meant to be kept current); a
    new title or text is embedded again. Only an active procedure changes: ProcedureNotActive otherwise, and
    Procedure.DoesNotExist when its scope was erased meanwhile."""
    title, text = changes.get("title", procedure.title), changes.get("text", procedure.text)
    vector = None
    if (title, text) != (procedure.title, procedure.text):
        vector = get_embedder().embed([procedure_embedding_text(title, text)])[0]
    with transaction.atomic():
        lock_scopes([(procedure.project_id, procedure.subject_id)])
        procedure = (
            Procedure.objects.select_for_update()
            .defer("search_vector")
            .get(id=procedure.id, project_id=procedure.project_id)
        )
        if procedure.status != ProcedureStatus.ACTIVE:
            raise ProcedureNotActive(f"the procedure is {procedure.status}")
        before = (procedure.title, procedure.text)
        fields = [name for name in PROCEDURE_FIELDS if name in changes]
        for name in fields:
            setattr(procedure, name, changes[name])
        after = (procedure.title, procedure.text)
        if after != before:  # embedded above, unless another edit changed the other half meanwhile
            procedure.embedding = (
                vector
                if vector is not None and after == (title, text)
                else (get_embedder().embed([procedure_embedding_text(*after)])[0])
            )
            fields.append("embedding")
        if fields:
            procedure.save(update_fields=[*fields, "updated_at"])
    return procedure


def procedure_retract(*, procedure: Procedure) -> Procedure:
    """Never served again; kept (with the traces that served it) until its scope is erased. Retracting twice
    is harmless; Procedure.DoesNotExist when its scope was erased meanwhile."""
    with transaction.atomic():
        lock_scopes([(procedure.project_id, procedure.subject_id)])
        procedure = (
            Procedure.objects.select_for_update()
            .defer("search_vector")
            .get(id=procedure.id, project_id=procedure.project_id)
        )
        if procedure.status != ProcedureStatus.RETRACTED:
            procedure.status = ProcedureStatus.RETRACTED
            procedure.save(update_fields=["status", "updated_at"])
    return procedure
