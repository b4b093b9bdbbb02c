"""What a context call considers: a fact, an episode or a procedure as the retrieval statements return it
(context/retrieval.py, context/multi_hop.py, context/retrieval_asof.py), scored and decided by the assembler."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass
class Candidate:
    id: object
    text: str
    category: str
    kind: str
    importance: float
    metadata: dict
    valid_from: datetime | None
    recorded_from: datetime
    similarity: float | None
    distance: float | None
    text_rank: float
    recency: float
    in_open_conflict: bool = False
    expired: bool = False
    score: float = 0.0


@dataclass
class EpisodeCandidate:
    id: object
    text: str
    occurred_at: datetime
    metadata: dict
    similarity: float | None
    distance: float | None
    text_rank: float
    recency: float
    score: float = 0.0


@dataclass
class ProcedureCandidate:
    id: object
    title: str
    text: str
    category: str
    importance: float
    metadata: dict
    updated_at: datetime
    similarity: float | None
    distance: float | None
    text_rank: float
    recency: float
    score: float = 0.0


def fact_candidate(r: dict) -> Candidate:
    """A fact row as a Candidate; the multi-hop query selects no similarity, text rank or block flags (its
    facts are found by a shared name, and blocked facts are filtered out in its SQL)."""
    return Candidate(
        id=r["id"],
        text=r["text"],
        category=r["category"],
        kind=r["kind"],
        importance=r["importance"],
        metadata=r["metadata"],
        valid_from=r["valid_from"],
        recorded_from=r["recorded_from"],
        similarity=r.get("similarity"),
        distance=r.get("distance"),
        text_rank=float(r.get("text_rank") or 0.0),
        recency=float(r["recency"]),
        in_open_conflict=bool(r.get("in_open_conflict")),
        expired=bool(r.get("expired")),
    )


def episode_candidate(r: dict) -> EpisodeCandidate:
    return EpisodeCandidate(
        id=r["id"],
        text=r["text"],
        occurred_at=r["occurred_at"],
        metadata=r["metadata"],
        similarity=r["similarity"],
        distance=r["distance"],
        text_rank=float(r["text_rank"] or 0.0),
        recency=float(r["recency"]),
    )


def procedure_candidate(r: dict) -> ProcedureCandidate:
    return ProcedureCandidate(
        id=r["id"],
        title=r["title"],
        text=r["text"],
        category=r["category"],
        importance=float(r["importance"]),
        metadata=r["metadata"],
        updated_at=r["updated_at"],
        similarity=r["similarity"],
        distance=r["distance"],
        text_rank=float(r["text_rank"] or 0.0),
        recency=float(r["recency"]),
    )
