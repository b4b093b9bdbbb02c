"""hakimem as an MCP server (`manage.py mcp`): four tools an agent calls, scoped by one API key.

- remember(text, ...)       writes a fact (de-duplicated, conflicts detected, as POST /v1/facts)
- recall(query, ...)        the context for a query: the rendered <haki_memory> block ("" when nothing is served)
- forget(fact_id)           retracts a fact (as DELETE /v1/facts/{id})
- inspect(trace_id)         the trace behind a recall (as GET /v1/inspect/{id})

The tools call the services in this process rather than the REST API through the client: a stdio server is
started by the agent's host on the same machine as the database, so going through HTTP would only add a
server to keep running and a hop per call. They validate their input with the REST API's own serializers and
report its error codes, and the key is checked on every call (a revoked key stops working at once). The
project is the key's; the subject is a tool argument, or the configured default. Each call runs as a REST
request does: one transaction, as the API's role under row-level security (hakimem/rowsecurity.py).
"""

from __future__ import annotations

import functools
import uuid
from contextlib import contextmanager
from typing import Annotated, Any, Literal

from django.conf import settings
from django.db import close_old_connections, transaction
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import Field
from rest_framework.exceptions import ValidationError

from context.assembler import context_assemble
from context.serializers import ContextRequestSerializer, call_budget, call_options, validate_budget
from facts import selectors as fact_selectors
from facts.errors import ServiceValidationError
from facts.writes import FactInput, fact_create_batch, fact_retract
from facts.serializers import FactInSerializer
from hakimem.auth import api_key_lookup
from hakimem.embeddings import EmbedderUnavailable
from hakimem.errors import ApiError, ErrorCode
from hakimem.fields import flatten_errors
from hakimem.rowsecurity import API_ROLE, scope_enter
from traces.selectors import trace_get, trace_inspect

SubjectArg = Annotated[
    str | None, Field(description="Whose memory: the subject id. Leave empty for the server's default subject.")
]


class MemoryToolError(ToolError):
    """A refused call, said the way the REST API says it: `<code>: <message>` (the error contract's code)."""

    def __init__(self, code: ErrorCode, message: str, errors: list[dict] | None = None):
        detail = "; ".join(f"{e['field']}: {e['message']}" for e in errors or [])
        super().__init__(f"{code.value}: {message}" + (f" ({detail})" if detail else ""))
        self.code = code


def _django_call(fn):
    """Each tool runs in a worker thread; give it a database connection the way a request gets one (an
    obsolete one is dropped before, the pooled one handed back after), and turn the API's exceptions into
    tool errors carrying their code."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        close_old_connections()
        try:
            return fn(*args, **kwargs)
        except ApiError as exc:
            raise MemoryToolError(exc.code, exc.message, exc.details.get("errors")) from exc
        except ValidationError as exc:
            raise MemoryToolError(
                ErrorCode.INVALID_REQUEST, "The request is invalid.", flatten_errors(exc.detail)
            ) from exc
        except ServiceValidationError as exc:
            raise MemoryToolError(ErrorCode.INVALID_REQUEST, "The request is invalid.", exc.errors) from exc
        except EmbedderUnavailable as exc:
            raise MemoryToolError(
                ErrorCode.EMBEDDER_UNAVAILABLE, f"The embedder is unavailable; nothing was written. ({exc})"
            ) from exc
        finally:
            close_old_connections()

    return wrapper


def _validated(serializer_class, data: dict) -> dict:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def _uuid(value: str, field: str):
    try:
        return uuid.UUID(str(value))
    except ValueError:
        raise ApiError(
            ErrorCode.INVALID_REQUEST,
            "The request is invalid.",
            details={"errors": [{"index": None, "field": field, "message": "must be a UUID"}]},
        ) from None


class MemoryTools:
    """The tools' behaviour, bound to one API key and an optional default subject."""

    def __init__(self, api_key: str, default_subject: str | None = None):
        self.api_key = api_key
        self.default_subject = default_subject or None

    def caller(self):
        key = api_key_lookup(self.api_key)
        if key is None:
            raise ApiError(ErrorCode.UNAUTHENTICATED, "Unknown or revoked API key.", status_code=401)
        return key

    @contextmanager
    def as_key(self):
        """A tool call runs as a REST request does: one transaction (a refused call writes nothing), as the API's
        role under row-level security, seeing only the key's project."""
        nested = transaction.get_connection().in_atomic_block
        with transaction.atomic():
            key = self.caller()
            before = scope_enter(API_ROLE, key.project_id) if settings.HAKI_ROW_SECURITY else None
            try:
                yield key
            finally:
                # transaction-local: inside an outer transaction they would outlive this call (as in the middleware)
                if before and nested and not transaction.get_connection().needs_rollback:
                    scope_enter(*before)

    def subject(self, subject_id: str | None) -> str:
        subject = subject_id or self.default_subject
        if not subject:
            raise ApiError(
                ErrorCode.INVALID_REQUEST,
                "The request is invalid.",
                details={
                    "errors": [
                        {"index": None, "field": "subject_id", "message": "required: no default subject is configured"}
                    ]
                },
            )
        return subject

    def remember(self, *, text: str, subject_id: str | None = None, **options: Any) -> dict:
        with self.as_key() as key:
            data = {"project_id": key.project_id, "subject_id": self.subject(subject_id), "text": text}
            data.update({k: v for k, v in options.items() if v is not None})
            item = _validated(FactInSerializer, data)
            result = fact_create_batch(items=[FactInput(**item)], actor=f"api_key:{key.key_id}")[0]
            return {
                "fact_id": str(result.fact.id),
                "subject_id": result.fact.subject_id,
                "text": result.fact.text,
                "deduplicated": result.deduplicated,
                "conflict_set_id": str(result.conflict_set.id) if result.conflict_set else None,
            }

    def recall(
        self, *, query: str, subject_id: str | None = None, budget_tokens: int | None = None, tiers: bool = False
    ) -> dict:
        with self.as_key() as key:
            data = {"project_id": key.project_id, "subject_id": self.subject(subject_id), "query": query}
            sent = None
            if budget_tokens is not None:
                data["budget_tokens"] = budget_tokens
                sent = validate_budget(data)
            if tiers:
                data["tiers"] = True
            params = _validated(ContextRequestSerializer, data)
            options = call_options(params)
            return context_assemble(
                project_id=key.project_id,
                subject_id=params["subject_id"],
                query=params["query"],
                budget_tokens=call_budget(sent, options),
                options=options,
            )

    def forget(self, *, fact_id: str) -> dict:
        with self.as_key() as key:
            fact = fact_selectors.fact_get(project_id=key.project_id, fact_id=_uuid(fact_id, "fact_id"))
            if fact is None:
                raise ApiError(ErrorCode.NOT_FOUND, "No such fact.", status_code=404)
            fact = fact_retract(fact=fact)
            return {"fact_id": str(fact.id), "subject_id": fact.subject_id, "text": fact.text, "status": fact.status}

    def inspect(self, *, trace_id: str) -> dict:
        with self.as_key() as key:
            trace = trace_get(project_id=key.project_id, trace_id=_uuid(trace_id, "trace_id"), wait_for_pending=True)
            if trace is None:
                raise ApiError(ErrorCode.NOT_FOUND, "No such trace.", status_code=404)
            return trace_inspect(trace=trace)


def build_server(tools: MemoryTools) -> MCPServer:
    project = tools.caller().project_id  # fails at start on a bad key, not at the first call
    subject_note = f" The default subject is {tools.default_subject!r}." if tools.default_subject else ""
    server = MCPServer(
        name="hakimem",
        instructions=(
            f"Long-term memory of project {project!r}. Call `recall` with the user's message before answering "
            "and put the block it returns in your context; call `remember` with each durable fact learned "
            "(one short self-contained sentence); `forget` retracts a fact that is wrong; `inspect` explains a "
            "recall by its trace id." + subject_note
        ),
    )

    @server.tool(
        description="Store one durable fact about the subject (one short, self-contained sentence). "
        "A repeat is de-duplicated; a contradiction opens a conflict set for a curator."
    )
    @_django_call
    def remember(
        text: Annotated[str, Field(description="The fact, e.g. 'Alice is allergic to peanuts.'")],
        subject_id: SubjectArg = None,
        category: Annotated[str | None, Field(description="A free label, e.g. 'health'.")] = None,
        kind: Annotated[
            Literal["fact", "preference"] | None, Field(description="'preference' for likes and wishes.")
        ] = None,
        importance: Annotated[float | None, Field(ge=0, le=1, description="0 to 1 (default 0.5).")] = None,
        volatility: Annotated[
            Literal["permanent", "stable", "volatile"] | None,
            Field(description="How soon it may stop holding (default permanent)."),
        ] = None,
        valid_from: Annotated[str | None, Field(description="ISO 8601 with an offset: since when it holds.")] = None,
    ) -> dict[str, Any]:
        return tools.remember(
            text=text,
            subject_id=subject_id,
            category=category,
            kind=kind,
            importance=importance,
            volatility=volatility,
            valid_from=valid_from,
        )

    @server.tool(
        description="The memory relevant to a query, as a <haki_memory> block to put in the prompt "
        "(empty when nothing relevant is stored). The structured result adds the trace id, and "
        "for an empty block its empty_reason: scope_unknown, scope_empty, budget_too_small, "
        "all_blocked or no_relevant_memory."
    )
    @_django_call
    def recall(
        query: Annotated[str, Field(description="The user's message or a question about the subject.")],
        subject_id: SubjectArg = None,
        budget_tokens: Annotated[
            int | None, Field(description="Largest size of the block in tokens (default 900).")
        ] = None,
        tiers: Annotated[
            bool,
            Field(
                description="Also the identity blocks (persona, standing instructions) and the "
                "procedures, each memory layer under its own budget, in five sections."
            ),
        ] = False,
    ) -> CallToolResult:
        packet = tools.recall(query=query, subject_id=subject_id, budget_tokens=budget_tokens, tiers=tiers)
        return CallToolResult(
            content=[TextContent(type="text", text=packet["rendered"])],
            structured_content={
                "rendered": packet["rendered"],
                "trace_id": packet["trace_id"],
                "status": packet["status"],
                "facts": [{"id": f["id"], "text": f["text"]} for f in packet["facts"]],
                "episodes": [
                    {"id": e["id"], "text": e["text"], "occurred_at": e["occurred_at"]} for e in packet["episodes"]
                ],
                "used_tokens": packet["used_tokens"],
                "empty_reason": packet["empty_reason"],
                "empty_details": packet["empty_details"],
            },
        )

    @server.tool(description="Retract a fact that is wrong or no longer wanted: it is never served again.")
    @_django_call
    def forget(
        fact_id: Annotated[str, Field(description="The fact's id (from remember or recall).")],
    ) -> dict[str, Any]:
        return tools.forget(fact_id=fact_id)

    @server.tool(
        description="Why a recall served what it did: the request, the packet, and every candidate "
        "considered with its decision (included, excluded, blocked) and reason code."
    )
    @_django_call
    def inspect(trace_id: Annotated[str, Field(description="The trace id a recall returned.")]) -> dict[str, Any]:
        return tools.inspect(trace_id=trace_id)

    return server
