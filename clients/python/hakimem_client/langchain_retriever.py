"""hakimem as a LangChain retriever: `HakimemRetriever`, a `langchain_core.retrievers.BaseRetriever` over the client.

    pip install "hakimem-client[langchain]"

    retriever = HakimemRetriever(client=Client(url, api_key=KEY, project_id="demo"), subject_id="alice")
    docs = retriever.invoke("What should Alice avoid eating?")     # one POST /v1/context
    block = retriever.packet("What should Alice avoid eating?").render()

Each call is one `POST /v1/context` for the subject; its documents are the packet's items in the order the server
rendered them (identity blocks, facts, episodes, procedures), each `Document.id` the item's id and its metadata:

- `type`: `fact`, `episode`, `procedure` or `identity` (the trace's item types); `kind`: a fact's kind (`fact` or
  `preference`), the type for the others;
- `id`, `score` (None for an identity block: never ranked), `tokens` (its cost in the budget), `trace_id` (the
  call's: `client.inspect(trace_id)` shows every decision behind it);
- facts: `category`, `reason_code`, `tier` (tiered calls), `valid_from`, `recorded_from`; episodes: `occurred_at`;
  procedures: `title`, `category`; identity blocks: `name`; every item: `metadata`, its own. Moments are ISO 8601.

The prompt block the server rendered and counted in the budget is the packet's, not the documents': `packet(query)`
returns the whole `ContextPacket` (`render()`, `trace_id`, `empty_reason`, ...), and `as_block()` is a runnable
from a query to that block, for a chain's prompt. An empty packet gives no documents and the block "".
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

try:
    from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables import Runnable, RunnableLambda
except ImportError as missing:  # an extra of the client, not one of its dependencies
    raise ImportError(f"{missing}: pip install 'hakimem-client[langchain]'") from missing

from hakimem_client.client import AsyncClient, Client
from hakimem_client.models import ContextPacket


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment else None


def packet_documents(packet: ContextPacket) -> list[Document]:
    """The packet's items as documents, in the order the server rendered them."""

    def doc(item_type: str, item: Any, kind: str, score: float | None, **extra: Any) -> Document:
        metadata = {
            "id": item.id,
            "type": item_type,
            "kind": kind,
            "score": score,
            "tokens": item.tokens,
            "trace_id": packet.trace_id,
            **extra,
        }
        return Document(id=item.id, page_content=item.text, metadata=metadata)

    return [
        *(doc("identity", i, "identity", None, name=i.name, metadata={}) for i in packet.identity),
        *(
            doc(
                "fact",
                f,
                f.kind,
                f.score,
                category=f.category,
                reason_code=f.reason_code,
                tier=f.tier,
                valid_from=_iso(f.valid_from),
                recorded_from=_iso(f.recorded_from),
                metadata=f.metadata,
            )
            for f in packet.facts
        ),
        *(
            doc("episode", e, "episode", e.score, occurred_at=_iso(e.occurred_at), metadata=e.metadata)
            for e in packet.episodes
        ),
        *(
            doc("procedure", p, "procedure", p.score, title=p.title, category=p.category, metadata=p.metadata)
            for p in packet.procedures
        ),
    ]


class HakimemRetriever(BaseRetriever):
    """The packet of one subject for a query, as documents. `client` serves `invoke`; `aclient`, when given,
    `ainvoke` (else `ainvoke` runs `invoke` in a thread). `context_options` go to `Client.context` as they are:
    `tiers`, `tier_budgets`, `category_boosts`, `min_score`, `candidate_limit`, `render_format`."""

    client: Client
    aclient: AsyncClient | None = None
    subject_id: str
    budget_tokens: int | None = None  # None: the server's default (900)
    context_options: dict[str, Any] = {}

    def packet(self, query: str) -> ContextPacket:
        return self.client.context(self.subject_id, query, budget_tokens=self.budget_tokens, **self.context_options)

    async def apacket(self, query: str) -> ContextPacket:
        if self.aclient is None:
            raise ValueError("apacket needs the retriever's aclient (an AsyncClient)")
        return await self.aclient.context(
            self.subject_id, query, budget_tokens=self.budget_tokens, **self.context_options
        )

    def as_block(self) -> Runnable[str, str]:
        """A runnable from a query to the rendered block ("" when nothing was served)."""

        async def ablock(query: str) -> str:
            return (await self.apacket(query)).render()

        return RunnableLambda(
            lambda query: self.packet(query).render(),
            afunc=ablock if self.aclient is not None else None,
            name="hakimem_block",
        )

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return packet_documents(self.packet(query))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        if self.aclient is None:
            return await super()._aget_relevant_documents(query, run_manager=run_manager)
        return packet_documents(await self.apacket(query))
