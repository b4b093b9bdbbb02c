"""The ContextPacket a call answers: what it served, by section, rendered under its budget, with the trace's id.
Built here, beside the assembler; the API edge only serializes it (context/serializers.py describes its shape)."""

from __future__ import annotations

from context.config import PLAIN, CallOptions
from context.packing import Budget, Decided
from context.render import Layout
from context.scoring import estimate_tokens
from hakimem.serializers import iso
from traces.models import SERVED_REASONS, ItemType, ReasonCode, TraceStatus, trace_id_new


def packet_build(
    *,
    decided: list[Decided],
    layout: Layout,
    options: CallOptions,
    budget_tokens: int,
    warnings: list[str],
    empty_reason: str | None,
    empty_details: dict | None,
    tiers: dict[str, Budget] | None,
) -> dict:
    """The packet of a call whose candidates are `decided`: the served ones in rank order within their section,
    the blocked ones counted in its warnings."""
    served = sorted((d for d in decided if d.reason in SERVED_REASONS), key=_render_order)
    warnings = warnings + blocked_warnings(decided)
    rendered = layout.render(_served_lines(served))
    packet = {
        "trace_id": str(trace_id_new()),
        "status": str(TraceStatus.DEGRADED if warnings else TraceStatus.OK),
        "facts": [packet_fact(d, layout.tiered) for d in served if d.item_type == ItemType.FACT],
        "episodes": [packet_episode(d) for d in served if d.item_type == ItemType.EPISODE],
        "warnings": warnings,
        "empty_reason": str(empty_reason) if empty_reason else None,
        "empty_details": empty_details,
        "budget_tokens": budget_tokens,
        "used_tokens": estimate_tokens(rendered) if rendered else 0,
        "rendered": rendered,
    }
    if options.tiers:
        packet["identity"] = [packet_identity(d) for d in served if d.item_type == ItemType.IDENTITY]
        packet["procedures"] = [packet_procedure(d) for d in served if d.item_type == ItemType.PROCEDURE]
        packet["tiers"] = {
            tier: {
                "budget_tokens": options.tier_budgets[tier],
                "used_tokens": -(-(4 * options.tier_budgets[tier] - b.left) // 4),
            }
            for tier, b in tiers.items()
        }
    if options != PLAIN:
        packet["render_format"] = options.render_format
    return packet


def _render_order(d: Decided) -> tuple:
    # By section when rendered: the included in rank order, a neighbouring turn just after its question, then the
    # multi-hop facts.
    anchor = d.follows or d
    return (anchor.reason != ReasonCode.INCLUDED, anchor.rank, d is not anchor)


def _served_lines(served: list[Decided]) -> dict[str, list[str]]:
    lines: dict[str, list[str]] = {}
    for d in served:
        lines.setdefault(d.section, []).append(d.line)
    return lines


def blocked_warnings(decided: list[Decided]) -> list[str]:
    withheld = sum(1 for d in decided if d.reason == ReasonCode.CONSENT_MISSING)
    conflicts = sum(1 for d in decided if d.reason == ReasonCode.CONFLICT_OPEN)
    expired = sum(1 for d in decided if d.reason == ReasonCode.VOLATILITY_EXPIRED)
    warnings = []
    if withheld:
        warnings.append(f"consent_missing: {withheld} fact(s) withheld without the subject's consent to their category")
    if conflicts:
        warnings.append(f"open_conflict: {conflicts} fact(s) hidden pending conflict resolution")
    if expired:
        warnings.append(f"volatility_expired: {expired} fact(s) hidden as stale")
    return warnings


def packet_fact(decided: Decided, tiered: bool = False) -> dict:
    """A served fact as the packet shows it; a tiered call says which tier served it (preferences or facts)."""
    item = decided.item
    fact = {
        "id": str(item.id),
        "text": item.text,
        "category": item.category,
        "kind": item.kind,
        "score": round(item.score, 6),
        "tokens": decided.tokens,
        "reason_code": str(decided.reason),
        "valid_from": iso(item.valid_from),
        "recorded_from": iso(item.recorded_from),
        "metadata": item.metadata,
    }
    if tiered:
        fact["tier"] = decided.section
    return fact


def packet_identity(decided: Decided) -> dict:
    item = decided.item
    return {"id": str(item.id), "name": item.name, "text": item.text, "tokens": decided.tokens}


def packet_procedure(decided: Decided) -> dict:
    item = decided.item
    return {
        "id": str(item.id),
        "title": item.title,
        "text": item.text,
        "category": item.category,
        "score": round(item.score, 6),
        "tokens": decided.tokens,
        "metadata": item.metadata,
    }


def packet_episode(decided: Decided) -> dict:
    item = decided.item
    return {
        "id": str(item.id),
        "text": item.text,
        "occurred_at": iso(item.occurred_at),
        "score": round(item.score, 6),
        "tokens": decided.tokens,
        "metadata": item.metadata,
    }
