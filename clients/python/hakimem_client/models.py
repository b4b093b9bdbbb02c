"""Typed views of the server's answers. Each is built by `from_dict` from the JSON the server sent; fields the
client does not know yet are ignored (a newer server stays readable), and the whole answer is kept in `raw`.
Moments are timezone-aware datetimes (the server writes them in UTC)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any, Generic, TypeVar

T = TypeVar("T")


def _dt(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


@dataclass(frozen=True)
class Fact:
    id: str
    project_id: str
    subject_id: str
    text: str
    status: str  # active | superseded | retracted
    category: str
    kind: str  # fact | preference
    importance: float
    volatility: str  # permanent | stable | volatile
    valid_from: datetime | None
    valid_to: datetime | None
    recorded_from: datetime | None
    recorded_to: datetime | None
    last_confirmed_at: datetime | None
    superseded_by: str | None
    source_event_id: str | None
    metadata: dict[str, Any]
    # Only on answers to a write: whether the fact was an existing one, and the conflict set it opened or joined.
    deduplicated: bool | None = None
    conflict_set_id: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Fact:
        return cls(
            id=d["id"],
            project_id=d["project_id"],
            subject_id=d["subject_id"],
            text=d["text"],
            status=d["status"],
            category=d.get("category", ""),
            kind=d.get("kind", "fact"),
            importance=d.get("importance", 0.5),
            volatility=d.get("volatility", "permanent"),
            valid_from=_dt(d.get("valid_from")),
            valid_to=_dt(d.get("valid_to")),
            recorded_from=_dt(d.get("recorded_from")),
            recorded_to=_dt(d.get("recorded_to")),
            last_confirmed_at=_dt(d.get("last_confirmed_at")),
            superseded_by=d.get("superseded_by"),
            source_event_id=d.get("source_event_id"),
            metadata=d.get("metadata") or {},
            deduplicated=d.get("deduplicated"),
            conflict_set_id=d.get("conflict_set_id"),
            raw=d,
        )


@dataclass(frozen=True)
class Event:
    """An episode: something that happened at a moment."""

    id: str
    project_id: str
    subject_id: str
    text: str
    occurred_at: datetime
    recorded_at: datetime | None
    metadata: dict[str, Any]
    # When the server extracts facts from events (HAKI_EXTRACTOR_URL): status, attempts, error, fact_ids; else None.
    extraction: dict[str, Any] | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Event:
        return cls(
            id=d["id"],
            project_id=d["project_id"],
            subject_id=d["subject_id"],
            text=d["text"],
            occurred_at=_dt(d["occurred_at"]),
            recorded_at=_dt(d.get("recorded_at")),
            metadata=d.get("metadata") or {},
            extraction=d.get("extraction"),
            raw=d,
        )


@dataclass(frozen=True)
class IdentityBlock:
    """An always-on text (a persona, a standing instruction) of a subject, or of the whole project (subject_id
    None); served first in a tiered context call, by position then name."""

    id: str
    project_id: str
    subject_id: str | None
    name: str
    text: str
    tokens: int  # its cost in the identity tier's budget
    position: int
    enabled: bool
    metadata: dict[str, Any]
    created_at: datetime | None
    updated_at: datetime | None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> IdentityBlock:
        return cls(
            id=d["id"],
            project_id=d["project_id"],
            subject_id=d.get("subject_id"),
            name=d["name"],
            text=d["text"],
            tokens=d.get("tokens", 0),
            position=d.get("position", 0),
            enabled=d.get("enabled", True),
            metadata=d.get("metadata") or {},
            created_at=_dt(d.get("created_at")),
            updated_at=_dt(d.get("updated_at")),
            raw=d,
        )


@dataclass(frozen=True)
class Procedure:
    """A workflow ("how we deploy") of a subject, or of the whole project (subject_id None)."""

    id: str
    project_id: str
    subject_id: str | None
    title: str
    text: str
    status: str  # active | retracted
    category: str
    importance: float
    metadata: dict[str, Any]
    created_at: datetime | None
    updated_at: datetime | None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Procedure:
        return cls(
            id=d["id"],
            project_id=d["project_id"],
            subject_id=d.get("subject_id"),
            title=d["title"],
            text=d["text"],
            status=d.get("status", "active"),
            category=d.get("category", ""),
            importance=d.get("importance", 0.5),
            metadata=d.get("metadata") or {},
            created_at=_dt(d.get("created_at")),
            updated_at=_dt(d.get("updated_at")),
            raw=d,
        )


@dataclass(frozen=True)
class NewFact:
    """A fact to write (`Client.write_facts`). None leaves a field to the server's default."""

    subject_id: str
    text: str
    category: str | None = None
    kind: str | None = None
    importance: float | None = None
    volatility: str | None = None
    valid_from: datetime | str | None = None
    valid_to: datetime | str | None = None
    source_event_id: str | None = None
    metadata: dict[str, Any] | None = None


@dataclass(frozen=True)
class NewEvent:
    """An event to write (`Client.write_events`); `occurred_at` must carry a timezone."""

    subject_id: str
    text: str
    occurred_at: datetime | str
    metadata: dict[str, Any] | None = None


def body_of(item: NewFact | NewEvent, project_id: str) -> dict[str, Any]:
    body: dict[str, Any] = {"project_id": project_id}
    for f in fields(item):
        value = getattr(item, f.name)
        if value is not None:
            body[f.name] = value.isoformat() if isinstance(value, datetime) else value
    return body


@dataclass(frozen=True)
class ConflictMember:
    fact_id: str
    text: str
    category: str
    status: str
    recorded_from: datetime | None
    valid_from: datetime | None
    valid_to: datetime | None
    source_event_id: str | None
    kept: bool | None
    similarity_to: dict[str, float]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ConflictMember:
        return cls(
            fact_id=d["fact_id"],
            text=d["text"],
            category=d.get("category", ""),
            status=d["status"],
            recorded_from=_dt(d.get("recorded_from")),
            valid_from=_dt(d.get("valid_from")),
            valid_to=_dt(d.get("valid_to")),
            source_event_id=d.get("source_event_id"),
            kept=d.get("kept"),
            similarity_to=d.get("similarity_to") or {},
        )


@dataclass(frozen=True)
class ConflictSet:
    """Facts of one scope that cannot all hold; open ones keep their facts out of every packet until resolved.
    `members` is filled by `get_conflict` and `resolve_conflict`, None on list pages."""

    id: str
    project_id: str
    subject_id: str
    status: str  # open | resolved | dismissed
    signal: str
    signal_detail: str
    similarity: float
    opened_at: datetime | None
    resolved_at: datetime | None
    resolved_by: str | None
    note: str
    members: list[ConflictMember] | None = None
    # what the claims rules read as contradicting: {"attribute", "holder", "values": [newer, older]}; None for a word rule
    reading: dict[str, Any] | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ConflictSet:
        members = d.get("members")
        return cls(
            id=d["id"],
            project_id=d["project_id"],
            subject_id=d["subject_id"],
            status=d["status"],
            signal=d.get("signal", ""),
            signal_detail=d.get("signal_detail", ""),
            similarity=d.get("similarity", 0.0),
            opened_at=_dt(d.get("opened_at")),
            resolved_at=_dt(d.get("resolved_at")),
            resolved_by=d.get("resolved_by"),
            note=d.get("note", ""),
            reading=d.get("reading"),
            members=None if members is None else [ConflictMember.from_dict(m) for m in members],
            raw=d,
        )


@dataclass(frozen=True)
class PacketFact:
    id: str
    text: str
    category: str
    kind: str
    score: float
    tokens: int
    reason_code: str
    valid_from: datetime | None
    recorded_from: datetime | None
    metadata: dict[str, Any]
    tier: str = ""  # tiered calls: "preferences" or "facts"

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PacketFact:
        return cls(
            id=d["id"],
            text=d["text"],
            category=d.get("category", ""),
            kind=d.get("kind", "fact"),
            score=d.get("score", 0.0),
            tokens=d.get("tokens", 0),
            reason_code=d.get("reason_code", ""),
            valid_from=_dt(d.get("valid_from")),
            recorded_from=_dt(d.get("recorded_from")),
            metadata=d.get("metadata") or {},
            tier=d.get("tier", ""),
        )


@dataclass(frozen=True)
class PacketEpisode:
    id: str
    text: str
    occurred_at: datetime
    score: float
    tokens: int
    metadata: dict[str, Any]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PacketEpisode:
        return cls(
            id=d["id"],
            text=d["text"],
            occurred_at=_dt(d["occurred_at"]),
            score=d.get("score", 0.0),
            tokens=d.get("tokens", 0),
            metadata=d.get("metadata") or {},
        )


@dataclass(frozen=True)
class PacketIdentity:
    """An identity block a tiered call served (always first, never ranked)."""

    id: str
    name: str
    text: str
    tokens: int

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PacketIdentity:
        return cls(id=d["id"], name=d.get("name", ""), text=d["text"], tokens=d.get("tokens", 0))


@dataclass(frozen=True)
class PacketProcedure:
    id: str
    title: str
    text: str
    category: str
    score: float
    tokens: int
    metadata: dict[str, Any]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PacketProcedure:
        return cls(
            id=d["id"],
            title=d.get("title", ""),
            text=d["text"],
            category=d.get("category", ""),
            score=d.get("score", 0.0),
            tokens=d.get("tokens", 0),
            metadata=d.get("metadata") or {},
        )


@dataclass(frozen=True)
class ContextPacket:
    """What `POST /v1/context` served for one LLM turn. `rendered` (and `render()`, `str()`) is the prompt block
    as the server rendered it and counted it in the budget: put it in the prompt as it is."""

    trace_id: str
    status: str
    facts: list[PacketFact]
    episodes: list[PacketEpisode]
    warnings: list[Any]
    empty_reason: str | None
    budget_tokens: int
    used_tokens: int
    rendered: str
    # Why an empty packet's reason holds, in numbers: {"smallest_fitting_budget": N} for budget_too_small, the blocked
    # candidates per reason code for all_blocked; None otherwise.
    empty_details: dict[str, Any] | None = None
    # Tiered calls only (tiers=True): the identity blocks and procedures served, and each tier's budget and use.
    identity: list[PacketIdentity] = field(default_factory=list)
    procedures: list[PacketProcedure] = field(default_factory=list)
    tiers: dict[str, dict[str, int]] = field(default_factory=dict)
    render_format: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ContextPacket:
        return cls(
            trace_id=d["trace_id"],
            status=d["status"],
            facts=[PacketFact.from_dict(f) for f in d.get("facts", [])],
            episodes=[PacketEpisode.from_dict(e) for e in d.get("episodes", [])],
            warnings=d.get("warnings", []),
            empty_reason=d.get("empty_reason"),
            empty_details=d.get("empty_details"),
            budget_tokens=d.get("budget_tokens", 0),
            used_tokens=d.get("used_tokens", 0),
            rendered=d.get("rendered", ""),
            identity=[PacketIdentity.from_dict(i) for i in d.get("identity", [])],
            procedures=[PacketProcedure.from_dict(p) for p in d.get("procedures", [])],
            tiers=d.get("tiers", {}),
            render_format=d.get("render_format"),
            raw=d,
        )

    @property
    def is_empty(self) -> bool:
        return not self.rendered

    def render(self) -> str:
        """The prompt block: `rendered`, or "" for an empty packet (a block saying nothing was found would only
        distract the model). The server renders it once, so that what the budget counted is what the model reads."""
        return self.rendered

    def __str__(self) -> str:
        return self.render()


@dataclass(frozen=True)
class Decision:
    """One candidate a context call considered: included, excluded or blocked, and why."""

    item_type: str  # fact | episode | procedure | identity
    item_id: str
    text: str
    decision: str  # included | excluded | blocked
    reason_code: str
    rank: int | None
    score: float | None
    score_parts: dict[str, float | None]
    tokens: int | None
    entity: str | None
    tier: str | None = None  # the section a tiered call packed the item for; None for a plain call
    superseded_by: str | None = None  # superseded_in_context: the fact that won the contradiction

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Decision:
        return cls(
            item_type=d["item_type"],
            item_id=d["item_id"],
            text=d.get("text", ""),
            decision=d["decision"],
            reason_code=d["reason_code"],
            rank=d.get("rank"),
            score=d.get("score"),
            score_parts=d.get("score_parts") or {},
            tokens=d.get("tokens"),
            entity=d.get("entity"),
            tier=d.get("tier"),
            superseded_by=d.get("superseded_by"),
        )


@dataclass(frozen=True)
class Trace:
    """`GET /v1/inspect/{trace_id}`: what a context call was asked, what it served, and every decision."""

    trace_id: str
    created_at: datetime | None
    request: dict[str, Any]  # project_id, subject_id, query, budget_tokens
    packet: dict[str, Any]  # status, empty_reason, warnings, used_tokens, facts_served, ..., rendered
    embedder: Any
    timings_ms: dict[str, float]
    latency_ms: float | None
    decisions: list[Decision]
    replay_of: str | None = None  # the trace this one replays; None for a context call
    replay: dict[str, Any] | None = None  # a replay's {"as_of", "overrides"}
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Trace:
        return cls(
            trace_id=d["trace_id"],
            created_at=_dt(d.get("created_at")),
            request=d.get("request") or {},
            packet=d.get("packet") or {},
            embedder=d.get("embedder"),
            timings_ms=d.get("timings_ms") or {},
            latency_ms=d.get("latency_ms"),
            decisions=[Decision.from_dict(x) for x in d.get("decisions", [])],
            replay_of=d.get("replay_of"),
            replay=d.get("replay"),
            raw=d,
        )


@dataclass(frozen=True)
class Replay:
    """`POST /v1/inspect/{trace_id}/replay`: the call run again, its new packet and trace, and the diff."""

    trace_id: str  # the replay's own trace
    replay_of: str
    as_of: str  # "now" or "original"
    overrides: dict[str, Any]
    config: dict[str, Any]  # the configuration the replay ran with, budget_tokens included
    packet: ContextPacket
    diff: dict[str, Any]  # identical, served_then, served_now, kept, jaccard, lost, gained, changed
    notes: list[str]
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Replay:
        return cls(
            trace_id=d["trace_id"],
            replay_of=d["replay_of"],
            as_of=d["as_of"],
            overrides=d.get("overrides") or {},
            config=d.get("config") or {},
            packet=ContextPacket.from_dict(d["packet"]),
            diff=d.get("diff") or {},
            notes=d.get("notes") or [],
            raw=d,
        )


@dataclass(frozen=True)
class Page(Generic[T]):
    """One keyset page of a list; pass `next_cursor` back as `cursor` for the next (None: this was the last)."""

    items: list[T]
    next_cursor: str | None

    def __iter__(self):
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


@dataclass(frozen=True)
class EraseResult:
    project_id: str
    subject_id: str
    deleted: dict[str, int]  # rows deleted per table

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> EraseResult:
        return cls(project_id=d["project_id"], subject_id=d["subject_id"], deleted=d.get("deleted") or {})
