"""hakimem as LangGraph's long-term memory: `HakimemStore`, a `langgraph.store.base.BaseStore` over the client.

    pip install "hakimem-client[langgraph]"

    store = HakimemStore(Client(url, api_key=KEY, project_id="demo"), text_fields=["text"])
    graph = builder.compile(store=store)      # nodes reach it as runtime.store / get_store()

How LangGraph's items map onto hakimem's memory:

- Project: the client's (`project_id`; an API key belongs to one project).
- Subject: one label of the namespace, `namespace[subject_label]` (0 by default: `("alice", "memories")`; pass
  `subject_label=1` for LangGraph's other usual shape, `("memories", "alice")`). The labels before it and the
  subject label form the subject's root namespace; the labels after it are folders within the subject. Everything
  the store writes under a subject is that subject's memory as the REST API, the MCP server and the other clients
  see it: it is served by `POST /v1/context`, de-duplicated, checked for contradictions, erased with the subject.
- Item: a fact. Its text is the value's text at `text_fields` (LangGraph's JSON paths, as in an `index` config:
  "$", the default, is the whole value as JSON; a put's own `index=[...]` overrides them, `index=False` is read as
  the default, since hakimem serves every fact it holds). The namespace, key and value are kept in the fact's
  metadata under "langgraph" (`{"items": [{"namespace", "key", "value", "created_at", "updated_at"}]}`), within
  the API's 16 KiB of metadata per fact.
- A fact written by other means (the REST API, extraction) is an item of its subject's root namespace, its key the
  fact's id and its value `{"text", "category", "kind"}`.

What follows from hakimem being a memory rather than a key-value table:

- hakimem keeps one fact per meaning in a subject: a put whose text repeats (or nearly repeats) another fact's is
  answered by that fact, and the store records the item on it, so both keys find it (each with its own value). A
  fact carries every item recorded on it; deleting one item removes its record, deleting the last retracts the fact.
- A put under an existing key with a new text makes a new version of the fact (the old one superseded, its history
  kept: `Client.fact_history`); with the same text it edits the value in place.
- A put that contradicts another fact opens a conflict set: `get` still finds both, a search with a query serves
  neither until a curator resolves it (as every context call would).
- `search` with a query is one `POST /v1/context` for the subject, ranked by hakimem (`score` is the packet's), under
  `search_budget_tokens`: it returns what that packet served, filtered, then `offset` and `limit`. Without a query
  it lists the subject's active facts, newest first. A namespace prefix must name the subject (hakimem searches one
  subject at a time), and so must `list_namespaces`' prefix condition: the API has no list of subjects.
- `get`, `put` and `delete` find an item by listing the subject's active facts (a request per 200; the API has no
  lookup by metadata), once per subject per batch. Two stores writing items onto one shared fact at once may lose
  one's record (the metadata is read, then written whole). Items have no TTL (`supports_ttl` is False).
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, NamedTuple

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        InvalidNamespaceError,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
    )
    from langgraph.store.base.embed import get_text_at_path
except ImportError as missing:  # an extra of the client, not one of its dependencies
    raise ImportError(f"{missing}: pip install 'hakimem-client[langgraph]'") from missing

from hakimem_client.client import AsyncClient, Client
from hakimem_client.models import Fact, PacketFact

METADATA_KEY = "langgraph"  # the fact metadata's key under which the store keeps its items
LIST_PAGE = 200  # the API's largest list page
DEFAULT_SEARCH_BUDGET = 4000  # tokens of the context call behind a search: room for dozens of facts


class _Ask(NamedTuple):
    """A client call the store's logic asks for; a driver sends it with the sync or the async client."""

    method: str
    args: tuple
    kwargs: dict


def _ask(method: str, *args: Any, **kwargs: Any) -> _Ask:
    return _Ask(method, args, kwargs)


@dataclass
class _Batch:
    """The active facts of each subject a batch has listed, kept current by the batch's own writes."""

    facts: dict[str, dict[str, Fact]] = field(default_factory=dict)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


# A Fact, or a packet's PacketFact: both carry the id, text, category, kind, recorded_from and metadata read here.
def _records(fact: Fact | PacketFact) -> list[dict[str, Any]]:
    return list((fact.metadata.get(METADATA_KEY) or {}).get("items") or [])


def _with_records(fact: Fact, records: list[dict[str, Any]]) -> dict[str, Any]:
    return {**fact.metadata, METADATA_KEY: {"items": records}}


def _is(record: dict[str, Any], namespace: tuple[str, ...], key: str) -> bool:
    return tuple(record["namespace"]) == namespace and record["key"] == key


def _matches(value: Any, wanted: Any) -> bool:
    """LangGraph's filter on a value: equality (nested objects key by key), or $eq $ne $gt $gte $lt $lte."""
    if isinstance(wanted, dict) and any(k.startswith("$") for k in wanted):
        compare = {
            "$eq": lambda a, b: a == b,
            "$ne": lambda a, b: a != b,
            "$gt": lambda a, b: a > b,
            "$gte": lambda a, b: a >= b,
            "$lt": lambda a, b: a < b,
            "$lte": lambda a, b: a <= b,
        }
        unknown = set(wanted) - set(compare)
        if unknown:
            raise ValueError(f"unsupported filter operator(s): {sorted(unknown)}")
        try:
            return all(compare[op](value, operand) for op, operand in wanted.items())
        except TypeError:  # an absent or differently typed field does not match an ordering
            return False
    if isinstance(wanted, dict):
        return isinstance(value, dict) and all(_matches(value.get(k), v) for k, v in wanted.items())
    return value == wanted


def _namespace_matches(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path) :]
    return all(p == "*" or p == n for n, p in zip(part, path))


class HakimemStore(BaseStore):
    """LangGraph's `BaseStore` on hakimem (the mapping is in this module's docstring). `client` sends `batch`;
    `aclient`, when given, sends `abatch` (else `abatch` runs `batch` in a thread)."""

    def __init__(
        self,
        client: Client,
        *,
        aclient: AsyncClient | None = None,
        subject_label: int = 0,
        text_fields: Iterable[str] = ("$",),
        search_budget_tokens: int = DEFAULT_SEARCH_BUDGET,
    ):
        if subject_label < 0:
            raise ValueError("subject_label is a position in the namespace: 0 or more")
        self.client = client
        self.aclient = aclient
        self.subject_label = subject_label
        self.text_fields = list(text_fields)
        self.search_budget_tokens = search_budget_tokens

    # --- BaseStore ----------------------------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return self._drive(self._batch(list(ops)))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        if self.aclient is None:
            return await asyncio.to_thread(self.batch, ops)
        return await self._adrive(self._batch(ops))

    # --- drivers: the same logic, sent by the sync or the async client --------------------------------------
    def _drive(self, logic: Generator[_Ask, Any, Any]) -> Any:
        try:
            ask = next(logic)
            while True:
                ask = logic.send(getattr(self.client, ask.method)(*ask.args, **ask.kwargs))
        except StopIteration as done:
            return done.value

    async def _adrive(self, logic: Generator[_Ask, Any, Any]) -> Any:
        try:
            ask = next(logic)
            while True:
                ask = logic.send(await getattr(self.aclient, ask.method)(*ask.args, **ask.kwargs))
        except StopIteration as done:
            return done.value

    # --- the logic ------------------------------------------------------------------------------------------
    def _batch(self, ops: list[Op]) -> Generator[_Ask, Any, list[Result]]:
        batch = _Batch()
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append((yield from self._get(batch, op)))
            elif isinstance(op, PutOp):
                results.append((yield from self._put(batch, op)))
            elif isinstance(op, SearchOp):
                results.append((yield from self._search(batch, op)))
            elif isinstance(op, ListNamespacesOp):
                results.append((yield from self._list_namespaces(batch, op)))
            else:
                raise TypeError(f"unknown store operation: {op!r}")
        return results

    def _subject(self, namespace: tuple[str, ...]) -> str:
        if len(namespace) <= self.subject_label:
            raise InvalidNamespaceError(
                f"{namespace}: hakimem reads its subject at namespace[{self.subject_label}] (subject_label), and "
                "searches or lists one subject at a time"
            )
        subject = namespace[self.subject_label]
        if subject == "*":
            raise InvalidNamespaceError(f"{namespace}: the subject label cannot be a wildcard")
        return subject

    def _root(self, namespace: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(namespace[: self.subject_label + 1])

    def _facts(self, batch: _Batch, subject: str) -> Generator[_Ask, Any, dict[str, Fact]]:
        if subject not in batch.facts:
            facts: dict[str, Fact] = {}
            cursor = None
            while True:
                page = yield _ask("list_facts", subject, status="active", limit=LIST_PAGE, cursor=cursor)
                facts.update((f.id, f) for f in page.items)
                if not page.next_cursor:
                    break
                cursor = page.next_cursor
            batch.facts[subject] = facts
        return batch.facts[subject]

    def _items(self, fact: Fact | PacketFact, root: tuple[str, ...]) -> list[dict[str, Any]]:
        """The items a fact holds: its records, or, for a fact the store did not write, the fact itself."""
        records = _records(fact)
        if records:
            return records
        when = (fact.recorded_from or datetime.now(timezone.utc)).isoformat()
        return [
            {
                "namespace": list(root),
                "key": fact.id,
                "created_at": when,
                "updated_at": when,
                "value": {"text": fact.text, "category": fact.category, "kind": fact.kind},
            }
        ]

    def _holder(self, batch: _Batch, namespace: tuple[str, ...], key: str) -> Generator[_Ask, Any, tuple]:
        """The fact holding the item, and its record; (None, None) when there is none."""
        facts = yield from self._facts(batch, self._subject(namespace))
        root = self._root(namespace)
        for fact in facts.values():
            for record in self._items(fact, root):
                if _is(record, namespace, key):
                    return fact, record
        return None, None

    def _written(self, batch: _Batch, fact: Fact, replaced: str | None = None) -> None:
        facts = batch.facts.setdefault(fact.subject_id, {})
        if replaced is not None:
            facts.pop(replaced, None)
        if fact.status == "active":
            facts[fact.id] = fact
        else:
            facts.pop(fact.id, None)

    def _get(self, batch: _Batch, op: GetOp) -> Generator[_Ask, Any, Item | None]:
        _, record = yield from self._holder(batch, tuple(op.namespace), str(op.key))
        return None if record is None else _item(record)

    def _text(self, value: dict[str, Any], index: Any) -> str:
        paths = index if isinstance(index, list) else self.text_fields
        text = " ".join(t for path in paths for t in get_text_at_path(value, path) if t.strip())
        if not text:
            raise ValueError(f"the value has no text at {paths}: hakimem stores an item as a fact, which needs one")
        return text

    def _put(self, batch: _Batch, op: PutOp) -> Generator[_Ask, Any, None]:
        namespace, key = tuple(op.namespace), str(op.key)
        holder, old = yield from self._holder(batch, namespace, key)
        if op.value is None:
            if holder is not None:
                yield from self._forget(batch, holder, namespace, key)
            return None
        value = dict(op.value)
        text = self._text(value, op.index)
        now = _now()
        record = {
            "namespace": list(namespace),
            "key": key,
            "value": value,
            "created_at": old["created_at"] if old else now,
            "updated_at": now,
        }
        if holder is not None:
            others = [r for r in _records(holder) if not _is(r, namespace, key)]
            if holder.text == text:  # the same memory: the value changes in place
                fact = yield _ask("update_fact", holder.id, metadata=_with_records(holder, [*others, record]))
                self._written(batch, fact)
                return None
            if not others:  # the item's own fact: its new text is a new version
                fact = yield _ask("update_fact", holder.id, text=text, metadata=_with_records(holder, [record]))
                self._written(batch, fact, replaced=holder.id)
                yield from self._record(batch, fact, record)
                return None
            # a fact other items share keeps them; this item leaves it for a fact of its own
            fact = yield _ask("update_fact", holder.id, metadata=_with_records(holder, others))
            self._written(batch, fact)
        fact = yield _ask("write_fact", self._subject(namespace), text, metadata={METADATA_KEY: {"items": [record]}})
        self._written(batch, fact)
        yield from self._record(batch, fact, record)
        return None

    def _record(self, batch: _Batch, fact: Fact, record: dict[str, Any]) -> Generator[_Ask, Any, None]:
        """A write hakimem answered with another fact (a duplicate of the text) records the item on that fact."""
        namespace, key = tuple(record["namespace"]), record["key"]
        if any(_is(r, namespace, key) and r == record for r in _records(fact)):
            return
        kept = [r for r in _records(fact) if not _is(r, namespace, key)]
        fact = yield _ask("update_fact", fact.id, metadata=_with_records(fact, [*kept, record]))
        self._written(batch, fact)

    def _forget(self, batch: _Batch, holder: Fact, namespace: tuple[str, ...], key: str) -> Generator[_Ask, Any, None]:
        others = [r for r in _records(holder) if not _is(r, namespace, key)]
        if others:
            fact = yield _ask("update_fact", holder.id, metadata=_with_records(holder, others))
        else:
            fact = yield _ask("retract_fact", holder.id)
        self._written(batch, fact)

    def _search(self, batch: _Batch, op: SearchOp) -> Generator[_Ask, Any, list[SearchItem]]:
        prefix = tuple(op.namespace_prefix)
        subject, root = self._subject(prefix), self._root(prefix)
        if op.query:
            packet = yield _ask("context", subject, op.query, budget_tokens=self.search_budget_tokens)
            ranked = sorted(packet.facts, key=lambda f: f.score, reverse=True)
            scored = [(f, f.score) for f in ranked]
        else:
            facts = yield from self._facts(batch, subject)
            newest = sorted(facts.values(), key=lambda f: f.recorded_from, reverse=True)
            scored = [(f, None) for f in newest]
        found = [
            _search_item(record, score)
            for fact, score in scored
            for record in self._items(fact, root)
            if tuple(record["namespace"][: len(prefix)]) == prefix
            and all(_matches(record["value"].get(k), v) for k, v in (op.filter or {}).items())
        ]
        return found[op.offset : op.offset + op.limit]

    def _list_namespaces(self, batch: _Batch, op: ListNamespacesOp) -> Generator[_Ask, Any, list[tuple[str, ...]]]:
        conditions = list(op.match_conditions or ())
        prefixes = [
            c.path
            for c in conditions
            if c.match_type == "prefix" and len(c.path) > self.subject_label and c.path[self.subject_label] != "*"
        ]
        if not prefixes:
            raise InvalidNamespaceError(
                f"hakimem lists the namespaces of one subject: give a prefix naming it at [{self.subject_label}]"
            )
        root = self._root(prefixes[0])
        facts = yield from self._facts(batch, self._subject(root))
        # a fact the store did not write lives in the root namespace, which a wildcard before the subject leaves unknown
        facts = facts.values() if "*" not in root else [f for f in facts.values() if _records(f)]
        namespaces = {tuple(r["namespace"]) for fact in facts for r in self._items(fact, root)}
        namespaces = {ns for ns in namespaces if all(_namespace_matches(ns, c) for c in conditions)}
        if op.max_depth is not None:
            namespaces = {ns[: op.max_depth] for ns in namespaces}
        return sorted(namespaces)[op.offset : op.offset + op.limit]


def _fields(record: dict[str, Any]) -> dict[str, Any]:
    return {
        "namespace": tuple(record["namespace"]),
        "key": record["key"],
        "value": record["value"],
        "created_at": datetime.fromisoformat(record["created_at"]),
        "updated_at": datetime.fromisoformat(record["updated_at"]),
    }


def _item(record: dict[str, Any]) -> Item:
    return Item(**_fields(record))


def _search_item(record: dict[str, Any], score: float | None) -> SearchItem:
    return SearchItem(score=score, **_fields(record))
