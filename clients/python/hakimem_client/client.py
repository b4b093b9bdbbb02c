"""`Client` (sync) and `AsyncClient` on httpx. Both build the same requests (hakimem_client/endpoints.py) and share
one retry policy (hakimem_client/retries.py); only the sending differs.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from datetime import datetime
from typing import Any

import httpx

from hakimem_client.endpoints import _Call, _Endpoints, _result
from hakimem_client.models import (
    ConflictSet,
    ContextPacket,
    EraseResult,
    Event,
    Fact,
    IdentityBlock,
    NewEvent,
    Replay,
    NewFact,
    Page,
    Procedure,
    Trace,
)
from hakimem_client.retries import _connection_error, _RetryPolicy

__version__ = "0.1.0"
MAX_BATCH = 500  # the server's largest batch (all-or-nothing per request)
# The server's default HAKI_WRITE_JOB_CHARS: a batch of facts with more characters of text is accepted as a job (202),
# so write_facts keeps each request under it and is answered with the facts.
LIGHT_BATCH_CHARS = 100_000


def _chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _fact_chunks(facts: list[Any], size: int) -> Iterator[list[Any]]:
    """Requests of at most `size` facts and LIGHT_BATCH_CHARS characters of text (a fact longer alone goes alone)."""
    chunk: list[Any] = []
    chars = 0
    for fact in facts:
        text = len(fact.text if isinstance(fact, NewFact) else str(fact.get("text", "")))
        if chunk and (len(chunk) == size or chars + text > LIGHT_BATCH_CHARS):
            yield chunk
            chunk, chars = [], 0
        chunk.append(fact)
        chars += text
    if chunk:
        yield chunk


def _fact_body(subject_id: str, text: str, options: dict[str, Any]) -> NewFact:
    return NewFact(subject_id=subject_id, text=text, **options)


class _Common:
    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        project_id: str | None,
        max_retries: int,
        backoff: float,
        max_backoff: float,
    ):
        self._endpoints = _Endpoints(project_id)
        self._retry = _RetryPolicy(max_retries, backoff, max_backoff)
        self._base_url = base_url.rstrip("/")
        self._headers = {
            "Authorization": f"Bearer {api_key}",
            "User-Agent": f"hakimem-client/{__version__}",
            "Accept": "application/json",
        }

    @property
    def project_id(self) -> str | None:
        return self._endpoints.project_id


class Client(_Common):
    """The sync client. `project_id` is the default scope of every call (a key belongs to one project).

    with Client("http://127.0.0.1:8000", api_key=KEY, project_id="demo") as haki:
        packet = haki.context("alice", "What should Alice avoid eating?")
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        project_id: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        transport: httpx.BaseTransport | None = None,
        http_client: httpx.Client | None = None,
    ):
        super().__init__(
            base_url, api_key, project_id=project_id, max_retries=max_retries, backoff=backoff, max_backoff=max_backoff
        )
        # An httpx client of the caller's own (proxies, event hooks, certificates) stays the caller's to close.
        self._owns_http = http_client is None
        self._http = http_client or httpx.Client(timeout=timeout, transport=transport)
        self._sleep: Callable[[float], None] = time.sleep

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _send(self, call: _Call) -> Any:
        attempt = 0
        while True:
            try:
                response = self._http.request(
                    call.method, self._base_url + call.path, params=call.params, json=call.json, headers=self._headers
                )
            except httpx.TransportError as exc:
                delay = self._retry.delay_for_error(attempt, exc, call)
                if delay is None:
                    raise _connection_error(exc) from exc
            else:
                delay = self._retry.delay_for_response(attempt, response)
                if delay is None:
                    return _result(call, response)
            self._sleep(delay)
            attempt += 1

    # --- facts -----------------------------------------------------------------------------------------
    def write_fact(self, subject_id: str, text: str, *, project_id: str | None = None, **options: Any) -> Fact:
        """One fact; options: category, kind, importance, volatility, valid_from, valid_to, source_event_id,
        metadata. The answer says whether it was a duplicate (`deduplicated`) or opened a conflict set."""
        return self.write_facts([_fact_body(subject_id, text, options)], project_id=project_id)[0]

    def write_facts(
        self, facts: Iterable[NewFact | dict[str, Any]], *, project_id: str | None = None, batch_size: int = MAX_BATCH
    ) -> list[Fact]:
        """Many facts, in requests of up to `batch_size` (at most 500) and 100,000 characters of text (the server
        writes a heavier batch as a job); each request is all-or-nothing, so on an error the batches before it are
        written and the rest are not."""
        written: list[Fact] = []
        for chunk in _fact_chunks(list(facts), min(batch_size, MAX_BATCH)):
            written += self._send(self._endpoints.write_facts(chunk, project_id))
        return written

    def list_facts(self, subject_id: str, *, project_id: str | None = None, **filters: Any) -> Page[Fact]:
        """Filters: status, category, kind, recorded_after, recorded_before, limit (1-200), cursor."""
        return self._send(self._endpoints.list_facts(subject_id, project_id, **filters))

    def iter_facts(self, subject_id: str, *, project_id: str | None = None, **filters: Any) -> Iterator[Fact]:
        """Every fact matching the filters, following the pages."""
        cursor = filters.pop("cursor", None)
        while True:
            page = self.list_facts(subject_id, project_id=project_id, cursor=cursor, **filters)
            yield from page.items
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def get_fact(self, fact_id: str) -> Fact:
        return self._send(self._endpoints.get_fact(fact_id))

    def update_fact(self, fact_id: str, **changes: Any) -> Fact:
        """Changes: text (makes a new version, the old one superseded), category, importance, volatility,
        valid_to, metadata (edited in place). Returns the fact as it now stands (the new version for text)."""
        return self._send(self._endpoints.update_fact(fact_id, changes))

    def retract_fact(self, fact_id: str) -> Fact:
        return self._send(self._endpoints.retract_fact(fact_id))

    def fact_history(self, fact_id: str) -> list[Fact]:
        return self._send(self._endpoints.fact_history(fact_id))

    # --- events ----------------------------------------------------------------------------------------
    def write_event(
        self,
        subject_id: str,
        text: str,
        occurred_at: datetime | str,
        *,
        metadata: dict[str, Any] | None = None,
        project_id: str | None = None,
    ) -> Event:
        return self.write_events([NewEvent(subject_id, text, occurred_at, metadata)], project_id=project_id)[0]

    def write_events(
        self, events: Iterable[NewEvent | dict[str, Any]], *, project_id: str | None = None, batch_size: int = MAX_BATCH
    ) -> list[Event]:
        written: list[Event] = []
        for chunk in _chunks(list(events), min(batch_size, MAX_BATCH)):
            written += self._send(self._endpoints.write_events(chunk, project_id))
        return written

    def list_events(self, subject_id: str, *, project_id: str | None = None, **filters: Any) -> Page[Event]:
        """Newest first. Filters: occurred_after, occurred_before, limit, cursor."""
        return self._send(self._endpoints.list_events(subject_id, project_id, **filters))

    def get_event(self, event_id: str) -> Event:
        """One event, with the status of its fact extraction when the server extracts."""
        return self._send(self._endpoints.get_event(event_id))

    # --- identity blocks and procedures ----------------------------------------------------------------
    def create_identity_block(
        self, subject_id: str | None, name: str, text: str, *, project_id: str | None = None, **options: Any
    ) -> IdentityBlock:
        """subject_id None: a block of the whole project. Options: position, enabled, metadata."""
        return self._send(self._endpoints.create_identity_block(subject_id, name, text, project_id, **options))

    def list_identity_blocks(
        self, subject_id: str | None = None, *, project_id: str | None = None
    ) -> list[IdentityBlock]:
        """The project's blocks and, with a subject, the subject's own after them, in serving order."""
        return self._send(self._endpoints.list_identity_blocks(subject_id, project_id))

    def get_identity_block(self, block_id: str) -> IdentityBlock:
        return self._send(self._endpoints.get_identity_block(block_id))

    def update_identity_block(self, block_id: str, **changes: Any) -> IdentityBlock:
        """Changes: name, text, position, enabled, metadata."""
        return self._send(self._endpoints.update_identity_block(block_id, changes))

    def delete_identity_block(self, block_id: str) -> None:
        return self._send(self._endpoints.delete_identity_block(block_id))

    def write_procedure(
        self, subject_id: str | None, title: str, text: str, *, project_id: str | None = None, **options: Any
    ) -> Procedure:
        """subject_id None: a procedure of the whole project. Options: category, importance, metadata."""
        return self._send(self._endpoints.write_procedure(subject_id, title, text, project_id, **options))

    def list_procedures(
        self, subject_id: str | None = None, *, project_id: str | None = None, **filters: Any
    ) -> Page[Procedure]:
        """The project's procedures and, with a subject, the subject's own, newest first. Filters: status,
        category, limit (1-200), cursor."""
        return self._send(self._endpoints.list_procedures(subject_id, project_id, **filters))

    def get_procedure(self, procedure_id: str) -> Procedure:
        return self._send(self._endpoints.get_procedure(procedure_id))

    def update_procedure(self, procedure_id: str, **changes: Any) -> Procedure:
        """Changes: title, text (embedded again), category, importance, metadata."""
        return self._send(self._endpoints.update_procedure(procedure_id, changes))

    def retract_procedure(self, procedure_id: str) -> Procedure:
        return self._send(self._endpoints.retract_procedure(procedure_id))

    # --- context and traces ----------------------------------------------------------------------------
    def context(
        self,
        subject_id: str,
        query: str,
        *,
        budget_tokens: int | None = None,
        project_id: str | None = None,
        tiers: bool | None = None,
        tier_budgets: dict[str, int] | None = None,
        category_boosts: dict[str, float] | None = None,
        min_score: float | None = None,
        candidate_limit: int | None = None,
        render_format: str | None = None,
    ) -> ContextPacket:
        """The packet for one LLM turn. Anything left None is not sent: a plain call. `tiers=True` (or
        `tier_budgets`) asks for identity blocks, preferences, facts, episodes and procedures, each under its own
        budget, rendered in five sections."""
        asks = {
            "tiers": tiers,
            "tier_budgets": tier_budgets,
            "category_boosts": category_boosts,
            "min_score": min_score,
            "candidate_limit": candidate_limit,
            "render_format": render_format,
        }
        return self._send(self._endpoints.context(subject_id, query, budget_tokens, project_id, asks))

    def inspect(self, trace_id: str) -> Trace:
        return self._send(self._endpoints.inspect(trace_id))

    def replay(self, trace_id: str, *, as_of: str | None = None, overrides: dict[str, Any] | None = None) -> Replay:
        """The traced call run again ("now", the default, or "original": the memory as it was), under optional
        overrides (w_similarity, w_text_rank, w_recency, tau_days, max_distance, dense_top_k, lexical_top_k,
        multi_hop_share, budget_tokens), with the diff against the original."""
        return self._send(self._endpoints.replay(trace_id, as_of, overrides))

    # --- conflicts and erasure -------------------------------------------------------------------------
    def list_conflicts(
        self,
        *,
        subject_id: str | None = None,
        status: str | None = None,
        project_id: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> Page[ConflictSet]:
        return self._send(
            self._endpoints.list_conflicts(project_id, subject_id=subject_id, status=status, limit=limit, cursor=cursor)
        )

    def get_conflict(self, conflict_id: str) -> ConflictSet:
        return self._send(self._endpoints.get_conflict(conflict_id))

    def resolve_conflict(
        self, conflict_id: str, *, keep: list[str] | None = None, dismiss: bool = False, note: str = ""
    ) -> ConflictSet:
        """Keep some facts (the others are superseded by the first kept), or dismiss the set (all stay)."""
        return self._send(self._endpoints.resolve_conflict(conflict_id, keep, dismiss, note))

    def erase_subject(self, subject_id: str, *, project_id: str | None = None) -> EraseResult:
        """Deletes the whole scope: facts, events, conflict sets, traces."""
        return self._send(self._endpoints.erase_subject(subject_id, project_id))

    def health(self) -> dict[str, Any]:
        return self._send(self._endpoints.health())


class AsyncClient(_Common):
    """The async client: the same methods as `Client`, awaited.

    async with AsyncClient("http://127.0.0.1:8000", api_key=KEY, project_id="demo") as haki:
        packet = await haki.context("alice", "What should Alice avoid eating?")
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        project_id: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
        http_client: httpx.AsyncClient | None = None,
    ):
        super().__init__(
            base_url, api_key, project_id=project_id, max_retries=max_retries, backoff=backoff, max_backoff=max_backoff
        )
        self._owns_http = http_client is None
        self._http = http_client or httpx.AsyncClient(timeout=timeout, transport=transport)
        self._sleep: Callable[[float], Any] = asyncio.sleep

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _send(self, call: _Call) -> Any:
        attempt = 0
        while True:
            try:
                response = await self._http.request(
                    call.method, self._base_url + call.path, params=call.params, json=call.json, headers=self._headers
                )
            except httpx.TransportError as exc:
                delay = self._retry.delay_for_error(attempt, exc, call)
                if delay is None:
                    raise _connection_error(exc) from exc
            else:
                delay = self._retry.delay_for_response(attempt, response)
                if delay is None:
                    return _result(call, response)
            await self._sleep(delay)
            attempt += 1

    # --- facts -----------------------------------------------------------------------------------------
    async def write_fact(self, subject_id: str, text: str, *, project_id: str | None = None, **options: Any) -> Fact:
        return (await self.write_facts([_fact_body(subject_id, text, options)], project_id=project_id))[0]

    async def write_facts(
        self, facts: Iterable[NewFact | dict[str, Any]], *, project_id: str | None = None, batch_size: int = MAX_BATCH
    ) -> list[Fact]:
        written: list[Fact] = []
        for chunk in _fact_chunks(list(facts), min(batch_size, MAX_BATCH)):
            written += await self._send(self._endpoints.write_facts(chunk, project_id))
        return written

    async def list_facts(self, subject_id: str, *, project_id: str | None = None, **filters: Any) -> Page[Fact]:
        return await self._send(self._endpoints.list_facts(subject_id, project_id, **filters))

    async def iter_facts(
        self, subject_id: str, *, project_id: str | None = None, **filters: Any
    ) -> AsyncIterator[Fact]:
        cursor = filters.pop("cursor", None)
        while True:
            page = await self.list_facts(subject_id, project_id=project_id, cursor=cursor, **filters)
            for fact in page.items:
                yield fact
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    async def get_fact(self, fact_id: str) -> Fact:
        return await self._send(self._endpoints.get_fact(fact_id))

    async def update_fact(self, fact_id: str, **changes: Any) -> Fact:
        return await self._send(self._endpoints.update_fact(fact_id, changes))

    async def retract_fact(self, fact_id: str) -> Fact:
        return await self._send(self._endpoints.retract_fact(fact_id))

    async def fact_history(self, fact_id: str) -> list[Fact]:
        return await self._send(self._endpoints.fact_history(fact_id))

    # --- events ----------------------------------------------------------------------------------------
    async def write_event(
        self,
        subject_id: str,
        text: str,
        occurred_at: datetime | str,
        *,
        metadata: dict[str, Any] | None = None,
        project_id: str | None = None,
    ) -> Event:
        return (await self.write_events([NewEvent(subject_id, text, occurred_at, metadata)], project_id=project_id))[0]

    async def write_events(
        self, events: Iterable[NewEvent | dict[str, Any]], *, project_id: str | None = None, batch_size: int = MAX_BATCH
    ) -> list[Event]:
        written: list[Event] = []
        for chunk in _chunks(list(events), min(batch_size, MAX_BATCH)):
            written += await self._send(self._endpoints.write_events(chunk, project_id))
        return written

    async def list_events(self, subject_id: str, *, project_id: str | None = None, **filters: Any) -> Page[Event]:
        return await self._send(self._endpoints.list_events(subject_id, project_id, **filters))

    async def get_event(self, event_id: str) -> Event:
        return await self._send(self._endpoints.get_event(event_id))

    # --- identity blocks and procedures ----------------------------------------------------------------
    async def create_identity_block(
        self, subject_id: str | None, name: str, text: str, *, project_id: str | None = None, **options: Any
    ) -> IdentityBlock:
        return await self._send(self._endpoints.create_identity_block(subject_id, name, text, project_id, **options))

    async def list_identity_blocks(
        self, subject_id: str | None = None, *, project_id: str | None = None
    ) -> list[IdentityBlock]:
        return await self._send(self._endpoints.list_identity_blocks(subject_id, project_id))

    async def get_identity_block(self, block_id: str) -> IdentityBlock:
        return await self._send(self._endpoints.get_identity_block(block_id))

    async def update_identity_block(self, block_id: str, **changes: Any) -> IdentityBlock:
        return await self._send(self._endpoints.update_identity_block(block_id, changes))

    async def delete_identity_block(self, block_id: str) -> None:
        return await self._send(self._endpoints.delete_identity_block(block_id))

    async def write_procedure(
        self, subject_id: str | None, title: str, text: str, *, project_id: str | None = None, **options: Any
    ) -> Procedure:
        return await self._send(self._endpoints.write_procedure(subject_id, title, text, project_id, **options))

    async def list_procedures(
        self, subject_id: str | None = None, *, project_id: str | None = None, **filters: Any
    ) -> Page[Procedure]:
        return await self._send(self._endpoints.list_procedures(subject_id, project_id, **filters))

    async def get_procedure(self, procedure_id: str) -> Procedure:
        return await self._send(self._endpoints.get_procedure(procedure_id))

    async def update_procedure(self, procedure_id: str, **changes: Any) -> Procedure:
        return await self._send(self._endpoints.update_procedure(procedure_id, changes))

    async def retract_procedure(self, procedure_id: str) -> Procedure:
        return await self._send(self._endpoints.retract_procedure(procedure_id))

    # --- context and traces ----------------------------------------------------------------------------
    async def context(
        self,
        subject_id: str,
        query: str,
        *,
        budget_tokens: int | None = None,
        project_id: str | None = None,
        tiers: bool | None = None,
        tier_budgets: dict[str, int] | None = None,
        category_boosts: dict[str, float] | None = None,
        min_score: float | None = None,
        candidate_limit: int | None = None,
        render_format: str | None = None,
    ) -> ContextPacket:
        asks = {
            "tiers": tiers,
            "tier_budgets": tier_budgets,
            "category_boosts": category_boosts,
            "min_score": min_score,
            "candidate_limit": candidate_limit,
            "render_format": render_format,
        }
        return await self._send(self._endpoints.context(subject_id, query, budget_tokens, project_id, asks))

    async def inspect(self, trace_id: str) -> Trace:
        return await self._send(self._endpoints.inspect(trace_id))

    async def replay(
        self, trace_id: str, *, as_of: str | None = None, overrides: dict[str, Any] | None = None
    ) -> Replay:
        return await self._send(self._endpoints.replay(trace_id, as_of, overrides))

    # --- conflicts and erasure -------------------------------------------------------------------------
    async def list_conflicts(
        self,
        *,
        subject_id: str | None = None,
        status: str | None = None,
        project_id: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> Page[ConflictSet]:
        return await self._send(
            self._endpoints.list_conflicts(project_id, subject_id=subject_id, status=status, limit=limit, cursor=cursor)
        )

    async def get_conflict(self, conflict_id: str) -> ConflictSet:
        return await self._send(self._endpoints.get_conflict(conflict_id))

    async def resolve_conflict(
        self, conflict_id: str, *, keep: list[str] | None = None, dismiss: bool = False, note: str = ""
    ) -> ConflictSet:
        return await self._send(self._endpoints.resolve_conflict(conflict_id, keep, dismiss, note))

    async def erase_subject(self, subject_id: str, *, project_id: str | None = None) -> EraseResult:
        return await self._send(self._endpoints.erase_subject(subject_id, project_id))

    async def health(self) -> dict[str, Any]:
        return await self._send(self._endpoints.health())
