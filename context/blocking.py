"""What keeps a context call's candidate from being served (step 4 of context/assembler.py: no consent to its
category, an open conflict, expired volatility, the relevance floor, the call's min_score), and why a call that served
nothing came back empty (step 6), which turns on those same gates.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from context.config import AssemblyConfig, CallOptions
from context.packing import Budget, Decided, without_consent
from context.retrieval import ScopeState
from traces.models import EmptyReason, ReasonCode

_BLOCKED = (ReasonCode.CONFLICT_OPEN, ReasonCode.CONSENT_MISSING, ReasonCode.VOLATILITY_EXPIRED)


def block(
    ranked: list[Decided], max_distance: float, consented: frozenset[str] | None = None, min_score: float = 0.0
) -> list[Decided]:
    """Decide the candidates that may not be served (no consent, open conflict, expired volatility, beyond the
    relevance floor, under the call's min_score); returns the others in rank order."""
    packable = []
    for d in ranked:
        item = d.item
        if without_consent(item, consented):
            d.reason = ReasonCode.CONSENT_MISSING
        elif getattr(item, "in_open_conflict", False):
            d.reason = ReasonCode.CONFLICT_OPEN
        elif getattr(item, "expired", False):
            d.reason = ReasonCode.VOLATILITY_EXPIRED
        elif _beyond_floor(item, max_distance):
            d.reason = ReasonCode.BELOW_RELEVANCE_FLOOR
        elif _below_min_score(item, min_score):
            d.reason = ReasonCode.BELOW_MIN_SCORE
        else:
            packable.append(d)
    return packable


def _beyond_floor(item, max_distance: float) -> bool:
    return max_distance > 0 and getattr(item, "distance", None) is not None and item.distance > max_distance


def _below_min_score(item, min_score: float) -> bool:
    return min_score > 0 and getattr(item, "score", min_score) < min_score


def _relevant(item, max_distance: float, min_score: float) -> bool:
    """Within the relevance floor and the call's min_score. (Identity blocks have neither a distance nor a score:
    never ranked nor gated.)"""
    return not _beyond_floor(item, max_distance) and not _below_min_score(item, min_score)


@dataclass(frozen=True)
class Empty:
    """Step 6: why a call that served nothing came back empty, and what the reason says in numbers."""

    reason: str | None = None
    details: dict | None = None


def why_empty(
    decided: list[Decided],
    *,
    total: Budget,
    tiers: dict[str, Budget] | None,
    options: CallOptions,
    config: AssemblyConfig,
    scope: Callable[[], ScopeState],
) -> Empty:
    """Why a call that served nothing came back empty, and what the reason says in numbers (the packet's
    empty_details). The first that holds, in this order:
    1. budget_too_small: a candidate passed every gate and did not fit; a larger budget would have served it, so
       this comes before what blocked the others. Details: the budget that serves something (fitting_budgets);
    2. all_blocked: some candidate within the relevance floor and min_score was blocked (open conflict, consent,
       expired volatility) and none was left to pack. Details: the blocked candidates per reason code;
    3. no_relevant_memory: there were candidates, and the floor or min_score held back every one not blocked;
    4. no candidate at all: scope_unknown when nothing was ever written for the subject, scope_empty when nothing
       it holds may be served now, else no_relevant_memory (the degraded path's full-text leg matched nothing).
       Only this case reads the store (`scope`, one statement), so that no call with a candidate pays for it."""
    over = [d for d in decided if d.reason == ReasonCode.OVER_BUDGET]
    if over:
        return Empty(EmptyReason.BUDGET_TOO_SMALL, fitting_budgets(over, total, tiers, options))
    if decided:
        blocked = [d for d in decided if d.reason in _BLOCKED]
        if any(_relevant(d.item, config.max_distance, options.min_score) for d in blocked):
            counts = {str(code): n for code in _BLOCKED if (n := sum(1 for d in blocked if d.reason == code))}
            return Empty(EmptyReason.ALL_BLOCKED, counts)
        return Empty(EmptyReason.NO_RELEVANT_MEMORY)
    state = scope()
    if not state.written:
        return Empty(EmptyReason.SCOPE_UNKNOWN)
    return Empty(EmptyReason.NO_RELEVANT_MEMORY if state.servable else EmptyReason.SCOPE_EMPTY)


def fitting_budgets(over: list[Decided], total: Budget, tiers: dict[str, Budget] | None, options: CallOptions) -> dict:
    """The smallest budget_tokens that serves something, where nothing was served and `over` did not fit: the
    cheapest of them alone, its line and its section's header inside the wrapper (Budget.of_tokens inverted). With
    nothing served no section is open, and the multi-hop share held back is given back to the ranking before the
    call ends, so at that budget the call serves at least that item, and below it nothing. A tiered call names the
    item's tier, and the tier budget it needs when its own is too small; the item is one whose tier budget fits
    it already, when there is one."""
    wrapper = total.layout.wrapper_chars()

    def needs(d: Decided) -> tuple[int, int]:
        cost = total.cost(d)
        return max(1, -(-(cost + wrapper - 4) // 4)), -(-cost // 4)  # (budget_tokens, a tier's budget)

    if tiers is None:
        return {"smallest_fitting_budget": min(needs(d)[0] for d in over)}
    tier_fits = [d for d in over if needs(d)[1] <= options.tier_budgets[d.section]]
    first = min(tier_fits or over, key=lambda d: (needs(d)[0], needs(d)[1]))
    budget, tier_budget = needs(first)
    details = {"smallest_fitting_budget": budget, "tier": first.section}
    if tier_budget > options.tier_budgets[first.section]:
        details["smallest_fitting_tier_budget"] = tier_budget
    return details
