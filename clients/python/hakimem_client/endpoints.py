"""What each call of the API sends (its method, path, parameters and body) and how its answer is read: one method
per endpoint, which Client and AsyncClient send alike."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote

import httpx

from hakimem_client.errors import error_from_response
from hakimem_client.models import (
    ConflictSet,
    ContextPacket,
    EraseResult,
    Event,
    Fact,
    IdentityBlock,
    NewEvent,
    NewFact,
    Page,
    Procedure,
    Replay,
    Trace,
    body_of,
)
from hakimem_client.retries import parse_retry_after


@dataclass(frozen=True)
class _Call:
    method: str
    path: str
    parse: Callable[[Any], Any]
    params: dict[str, Any] | None = None
    json: Any = None
    idempotent: bool = False


def _iso(value: datetime | str | None) -> str | None:
    return value.isoformat() if isinstance(value, datetime) else value


def _params(**kwargs: Any) -> dict[str, Any]:
    return {k: _iso(v) if isinstance(v, datetime) else v for k, v in kwargs.items() if v is not None}


def _result(call: _Call, response: httpx.Response) -> Any:
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.is_success:
        return call.parse(body)
    raise error_from_response(
        response.status_code, body, retry_after=parse_retry_after(response.headers.get("Retry-After"))
    )


class _Endpoints:
    """One method per endpoint, each returning the request to send and how to read its answer."""

    def __init__(self, project_id: str | None):
        self.project_id = project_id

    def _project(self, project_id: str | None) -> str:
        project = project_id or self.project_id
        if not project:
            raise ValueError("project_id is required: give it to the client or to the call")
        return project

    # --- facts -----------------------------------------------------------------------------------------
    def write_facts(self, facts: list[NewFact | dict[str, Any]], project_id: str | None) -> _Call:
        project = self._project(project_id)
        items = [body_of(f, project) if isinstance(f, NewFact) else {"project_id": project, **f} for f in facts]
        return _Call("POST", "/v1/facts", lambda b: [Fact.from_dict(f) for f in b["facts"]], json={"facts": items})

    def list_facts(self, subject_id: str, project_id: str | None, **filters: Any) -> _Call:
        params = _params(project_id=self._project(project_id), subject_id=subject_id, **filters)
        return _Call(
            "GET",
            "/v1/facts",
            lambda b: Page([Fact.from_dict(f) for f in b["facts"]], b["next_cursor"]),
            params=params,
            idempotent=True,
        )

    def get_fact(self, fact_id: str) -> _Call:
        return _Call("GET", f"/v1/facts/{quote(str(fact_id), safe='')}", Fact.from_dict, idempotent=True)

    def update_fact(self, fact_id: str, changes: dict[str, Any]) -> _Call:
        body = {k: _iso(v) if isinstance(v, datetime) else v for k, v in changes.items()}
        return _Call("PATCH", f"/v1/facts/{quote(str(fact_id), safe='')}", Fact.from_dict, json=body)

    def retract_fact(self, fact_id: str) -> _Call:
        # Retracting twice is harmless on the server: safe to repeat.
        return _Call("DELETE", f"/v1/facts/{quote(str(fact_id), safe='')}", Fact.from_dict, idempotent=True)

    def fact_history(self, fact_id: str) -> _Call:
        return _Call(
            "GET",
            f"/v1/facts/{quote(str(fact_id), safe='')}/history",
            lambda b: [Fact.from_dict(f) for f in b["versions"]],
            idempotent=True,
        )

    # --- events ----------------------------------------------------------------------------------------
    def write_events(self, events: list[NewEvent | dict[str, Any]], project_id: str | None) -> _Call:
        project = self._project(project_id)
        items = [body_of(e, project) if isinstance(e, NewEvent) else {"project_id": project, **e} for e in events]
        items = [{**i, "occurred_at": _iso(i.get("occurred_at"))} for i in items]
        return _Call("POST", "/v1/events", lambda b: [Event.from_dict(e) for e in b["events"]], json={"events": items})

    def list_events(self, subject_id: str, project_id: str | None, **filters: Any) -> _Call:
        params = _params(project_id=self._project(project_id), subject_id=subject_id, **filters)
        return _Call(
            "GET",
            "/v1/events",
            lambda b: Page([Event.from_dict(e) for e in b["events"]], b["next_cursor"]),
            params=params,
            idempotent=True,
        )

    def get_event(self, event_id: str) -> _Call:
        return _Call("GET", f"/v1/events/{quote(str(event_id), safe='')}", Event.from_dict, idempotent=True)

    # --- identity blocks and procedures ----------------------------------------------------------------
    # subject_id None: the whole project's.
    def _scoped_body(self, subject_id: str | None, project_id: str | None, fields: dict[str, Any]) -> dict[str, Any]:
        body = {"project_id": self._project(project_id), **{k: v for k, v in fields.items() if v is not None}}
        if subject_id is not None:
            body["subject_id"] = subject_id
        return body

    def create_identity_block(
        self, subject_id: str | None, name: str, text: str, project_id: str | None, **options: Any
    ) -> _Call:
        body = self._scoped_body(subject_id, project_id, {"name": name, "text": text, **options})
        return _Call("POST", "/v1/identity-blocks", IdentityBlock.from_dict, json=body)

    def list_identity_blocks(self, subject_id: str | None, project_id: str | None) -> _Call:
        params = _params(project_id=self._project(project_id), subject_id=subject_id)
        return _Call(
            "GET",
            "/v1/identity-blocks",
            lambda b: [IdentityBlock.from_dict(x) for x in b["identity_blocks"]],
            params=params,
            idempotent=True,
        )

    def get_identity_block(self, block_id: str) -> _Call:
        return _Call(
            "GET", f"/v1/identity-blocks/{quote(str(block_id), safe='')}", IdentityBlock.from_dict, idempotent=True
        )

    def update_identity_block(self, block_id: str, changes: dict[str, Any]) -> _Call:
        return _Call(
            "PATCH", f"/v1/identity-blocks/{quote(str(block_id), safe='')}", IdentityBlock.from_dict, json=changes
        )

    def delete_identity_block(self, block_id: str) -> _Call:
        # A second delete answers 404 (NotFoundError), after the first has done its work: retried on a lost
        # connection like the other deletes.
        return _Call("DELETE", f"/v1/identity-blocks/{quote(str(block_id), safe='')}", lambda b: None, idempotent=True)

    def write_procedure(
        self, subject_id: str | None, title: str, text: str, project_id: str | None, **options: Any
    ) -> _Call:
        body = self._scoped_body(subject_id, project_id, {"title": title, "text": text, **options})
        return _Call("POST", "/v1/procedures", Procedure.from_dict, json=body)

    def list_procedures(self, subject_id: str | None, project_id: str | None, **filters: Any) -> _Call:
        params = _params(project_id=self._project(project_id), subject_id=subject_id, **filters)
        return _Call(
            "GET",
            "/v1/procedures",
            lambda b: Page([Procedure.from_dict(x) for x in b["procedures"]], b["next_cursor"]),
            params=params,
            idempotent=True,
        )

    def get_procedure(self, procedure_id: str) -> _Call:
        return _Call("GET", f"/v1/procedures/{quote(str(procedure_id), safe='')}", Procedure.from_dict, idempotent=True)

    def update_procedure(self, procedure_id: str, changes: dict[str, Any]) -> _Call:
        return _Call("PATCH", f"/v1/procedures/{quote(str(procedure_id), safe='')}", Procedure.from_dict, json=changes)

    def retract_procedure(self, procedure_id: str) -> _Call:
        # Retracting twice is harmless on the server: safe to repeat.
        return _Call(
            "DELETE", f"/v1/procedures/{quote(str(procedure_id), safe='')}", Procedure.from_dict, idempotent=True
        )

    # --- context and traces ----------------------------------------------------------------------------
    def context(
        self, subject_id: str, query: str, budget_tokens: int | None, project_id: str | None, asks: dict[str, Any]
    ) -> _Call:
        body: dict[str, Any] = {"project_id": self._project(project_id), "subject_id": subject_id, "query": query}
        if budget_tokens is not None:
            body["budget_tokens"] = budget_tokens
        body.update({k: v for k, v in asks.items() if v is not None})
        # It only reads memory and writes its own trace: repeating it is safe.
        return _Call("POST", "/v1/context", ContextPacket.from_dict, json=body, idempotent=True)

    def inspect(self, trace_id: str) -> _Call:
        return _Call("GET", f"/v1/inspect/{quote(str(trace_id), safe='')}", Trace.from_dict, idempotent=True)

    def replay(self, trace_id: str, as_of: str | None, overrides: dict[str, Any] | None) -> _Call:
        body: dict[str, Any] = {}
        if as_of is not None:
            body["as_of"] = as_of
        if overrides:
            body["overrides"] = overrides
        # It writes a trace of its own each time: not retried, so one call is one replay.
        return _Call("POST", f"/v1/inspect/{quote(str(trace_id), safe='')}/replay", Replay.from_dict, json=body)

    # --- conflicts and erasure -------------------------------------------------------------------------
    def list_conflicts(self, project_id: str | None, **filters: Any) -> _Call:
        params = _params(project_id=self._project(project_id), **filters)
        return _Call(
            "GET",
            "/v1/conflicts",
            lambda b: Page([ConflictSet.from_dict(c) for c in b["conflicts"]], b["next_cursor"]),
            params=params,
            idempotent=True,
        )

    def get_conflict(self, conflict_id: str) -> _Call:
        return _Call("GET", f"/v1/conflicts/{quote(str(conflict_id), safe='')}", ConflictSet.from_dict, idempotent=True)

    def resolve_conflict(self, conflict_id: str, keep: list[str] | None, dismiss: bool, note: str) -> _Call:
        body: dict[str, Any] = {"note": note}
        if keep is not None:
            body["keep"] = [str(k) for k in keep]
        if dismiss:
            body["dismiss"] = True
        return _Call(
            "POST", f"/v1/conflicts/{quote(str(conflict_id), safe='')}/resolve", ConflictSet.from_dict, json=body
        )

    def erase_subject(self, subject_id: str, project_id: str | None) -> _Call:
        return _Call(
            "DELETE",
            f"/v1/subjects/{quote(subject_id, safe='')}",
            EraseResult.from_dict,
            params={"project_id": self._project(project_id)},
            idempotent=True,
        )

    def health(self) -> _Call:
        return _Call("GET", "/v1/health", lambda b: b, idempotent=True)
