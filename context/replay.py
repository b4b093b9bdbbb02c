"""Replay: run a traced context call again, against the memory now or as it stood then, under today's
configuration or a changed one, and say what changed (POST /v1/inspect/{trace_id}/replay, manage.py replay).

A replay writes a trace of its own (traces.Trace.replay_of names the original, .replay how it ran), which the
statistics never count and the subject's erasure deletes with the rest of the scope.

as_of "original" rebuilds the store at the call's time T from its bitemporal columns (context/retrieval_asof.py)
and takes from the original trace what the store does not version (Trace.inputs: the configuration, the query
words' weights read from pg_stats, the consents, the names' frequencies multi-hop read; and the volatility
verdicts of the facts it decided). What it cannot bring back is listed in README.md (Replay).
"""

from __future__ import annotations

from collections import Counter

from context.assembler import Rerun, context_assemble
from context.config import AssemblyConfig, CallOptions, default_config
from traces.models import ReasonCode, Trace
from traces.selectors import trace_decisions

AS_OF_NOW, AS_OF_ORIGINAL = "now", "original"

# A fact decided with one of these reasons was not stale at the call's time (block() checks expiry before the
# floor and the budget); one decided volatility_expired was. Blocked by consent or a conflict: unknown.
_FRESH = (ReasonCode.INCLUDED, ReasonCode.MULTI_HOP_EXPANSION, ReasonCode.OVER_BUDGET, ReasonCode.BELOW_RELEVANCE_FLOOR)


class ReplayRefused(Exception):
    """The trace cannot be replayed (a replay itself, or its scope erased while the replay ran)."""


def _verdicts(decisions: list[dict]) -> dict:
    facts = [d for d in decisions if d["item_type"] == "fact"]
    return {
        "expired": [d["item_id"] for d in facts if d["reason_code"] == ReasonCode.VOLATILITY_EXPIRED],
        "fresh": [d["item_id"] for d in facts if d["reason_code"] in _FRESH],
    }


def context_replay(*, trace: Trace, as_of: str = AS_OF_NOW, overrides: dict | None = None) -> dict:
    """Replay `trace` (a context call's, not a replay's) and compare. overrides: validated already
    (context/serializers.py, ReplayOverridesSerializer): AssemblyConfig fields and budget_tokens."""
    if trace.replay_of is not None:
        raise ReplayRefused(f"trace {trace.id} is a replay; replay its original, {trace.replay_of}")
    overrides = dict(overrides or {})
    original = trace_decisions(trace=trace)
    recorded = trace.inputs or {}
    notes = []
    if as_of == AS_OF_ORIGINAL:
        base = AssemblyConfig.from_dict(recorded["config"]) if recorded.get("config") else default_config()
        if not recorded:
            notes.append(
                "this call was traced before calls recorded their inputs: today's word statistics, consents "
                "and configuration stand in for the call's"
            )
        rerun = Rerun(
            replay_of=trace.id,
            marks={"as_of": as_of, "overrides": overrides},
            as_of=trace.created_at,
            recorded=recorded,
            verdicts=_verdicts(original),
        )
    else:
        base = default_config()
        rerun = Rerun(replay_of=trace.id, marks={"as_of": as_of, "overrides": overrides})
    config = base.with_overrides(overrides)
    budget = overrides.get("budget_tokens", trace.budget_tokens)
    # The call's own asks (tiers, boosts, min_score, candidate_limit, render format) are part of the call: replayed
    # as they were asked, whichever memory the replay reads.
    packet = context_assemble(
        project_id=trace.project_id,
        subject_id=trace.subject_id,
        query=trace.query,
        budget_tokens=budget,
        config=config,
        rerun=rerun,
        options=CallOptions.from_dict(recorded.get("options")),
    )
    if not Trace.objects.filter(id=packet["trace_id"]).exists():
        raise ReplayRefused("the subject was erased while the replay ran")
    replayed = trace_decisions(trace=Trace(id=packet["trace_id"], project_id=trace.project_id))
    return {
        "trace_id": packet["trace_id"],
        "replay_of": str(trace.id),
        "as_of": as_of,
        "overrides": overrides,
        "config": {**config.as_dict(), "budget_tokens": budget},
        "packet": packet,
        "diff": decisions_diff(original, replayed),
        "notes": notes,
    }


def _key(d: dict) -> tuple[str, str]:
    return d["item_type"], str(d["item_id"])


def _side(d: dict | None) -> dict | None:
    if d is None:
        return None  # not a candidate on that side
    return {
        "decision": d["decision"],
        "reason_code": d["reason_code"],
        "rank": d["rank"],
        "score": d["score"],
        "score_parts": {
            "similarity": d["similarity"],
            "cosine_distance": d["cosine_distance"],
            "text_rank": d["text_rank"],
            "recency": d["recency"],
        },
        "tokens": d["tokens"],
        "entity": d["entity"] or None,
    }


def _comparable(d: dict) -> tuple:
    return (
        *_key(d),
        d["reason_code"],
        d["rank"],
        d["score"],
        d["similarity"],
        d["cosine_distance"],
        d["text_rank"],
        d["recency"],
        d["tokens"],
        d["entity"] or "",
    )


def decisions_diff(then: list[dict], now: list[dict]) -> dict:
    """Served then and not now (`lost`), now and not then (`gained`), each with both sides' decision (None on a
    side where the item was not even a candidate); `changed`: the other items candidates on both sides whose rank,
    reason code or score parts moved, largest rank move first; and whether every decision is the same (item,
    reason code, rank, score parts, tokens)."""
    t, n = {_key(d): d for d in then}, {_key(d): d for d in now}
    served_t = {k for k, d in t.items() if d["decision"] == "included"}
    served_n = {k for k, d in n.items() if d["decision"] == "included"}

    def item(k):
        d = n.get(k) or t.get(k)
        return {"item_type": k[0], "item_id": k[1], "text": d["text"], "then": _side(t.get(k)), "now": _side(n.get(k))}

    lost = [item(k) for k in sorted(served_t - served_n, key=lambda k: t[k]["rank"])]
    gained = [item(k) for k in sorted(served_n - served_t, key=lambda k: n[k]["rank"])]
    changed = sorted(
        (
            {
                "item_type": k[0],
                "item_id": k[1],
                "text": n[k]["text"],
                "rank_then": t[k]["rank"],
                "rank_now": n[k]["rank"],
                "then": _side(t[k]),
                "now": _side(n[k]),
            }
            for k in (t.keys() & n.keys()) - (served_t ^ served_n)
            if _comparable(t[k]) != _comparable(n[k])
        ),
        key=lambda m: (-abs(m["rank_now"] - m["rank_then"]), m["rank_now"], m["item_id"]),
    )
    union = served_t | served_n
    return {
        "identical": sorted(map(_comparable, then)) == sorted(map(_comparable, now)),
        "served_then": len(served_t),
        "served_now": len(served_n),
        "kept": len(served_t & served_n),
        "jaccard": round(len(served_t & served_n) / len(union), 6) if union else 1.0,
        "lost": lost,
        "gained": gained,
        "changed": changed,
    }


# --- many calls: manage.py replay ----------------------------------------------------------------------------

TOP_ITEMS = 10


def replay_sample(*, project_id: str, subject_id: str | None, since, until, limit: int) -> list[Trace]:
    """Up to `limit` context calls (never replays) of the project, or of one subject, made in [since, until): a
    sample spread over the period (ordered by their random uuid4 ids, so the same arguments pick the same calls).
    -- uses: traces_trace_project_time (project_id, created_at)"""
    traces = Trace.objects.filter(
        project_id=project_id, created_at__gte=since, created_at__lt=until, replay_of__isnull=True
    )
    if subject_id:
        traces = traces.filter(subject_id=subject_id)
    return list(traces.order_by("id")[:limit])


def replay_batch(*, traces: list[Trace], as_of: str, overrides: dict, progress=lambda: None) -> dict:
    """Replay each trace and sum up what the change does across them: the share of calls whose served set changes,
    the mean Jaccard overlap of the served items, the injection rate (calls serving something, as
    /v1/stats/overview counts it) and the mean used tokens before and after, the items most often gained and lost.
    A call whose subject was erased meanwhile is skipped and counted."""
    calls, skipped = [], 0
    gained, lost, texts = Counter(), Counter(), {}
    for trace in traces:
        try:
            result = context_replay(trace=trace, as_of=as_of, overrides=overrides)
        except ReplayRefused:
            skipped += 1
            progress()
            continue
        diff, packet = result["diff"], result["packet"]
        for side, counter in ((diff["gained"], gained), (diff["lost"], lost)):
            for item in side:
                counter[(item["item_type"], item["item_id"])] += 1
                texts[(item["item_type"], item["item_id"])] = item["text"]
        calls.append(
            {
                "trace_id": str(trace.id),
                "replay_trace_id": result["trace_id"],
                "subject_id": trace.subject_id,
                "changed": bool(diff["gained"] or diff["lost"]),
                "jaccard": diff["jaccard"],
                "facts_served_before": trace.facts_served,
                "facts_served_after": len(packet["facts"]),
                "used_tokens_before": trace.used_tokens,
                "used_tokens_after": packet["used_tokens"],
                "gained": [i["item_id"] for i in diff["gained"]],
                "lost": [i["item_id"] for i in diff["lost"]],
            }
        )
        progress()
    n = len(calls)

    def mean(values):
        values = list(values)
        return sum(values) / len(values) if values else None

    def top(counter):
        return [
            {"item_type": k[0], "item_id": k[1], "text": texts[k], "calls": c}
            for k, c in sorted(counter.items(), key=lambda kc: (-kc[1], kc[0]))[:TOP_ITEMS]
        ]

    return {
        "as_of": as_of,
        "overrides": overrides,
        "calls": n,
        "skipped": skipped,
        "changed_share": mean(c["changed"] for c in calls),
        "mean_jaccard": mean(c["jaccard"] for c in calls),
        "injection_rate_before": mean(c["used_tokens_before"] > 0 for c in calls),
        "injection_rate_after": mean(c["used_tokens_after"] > 0 for c in calls),
        "mean_used_tokens_before": mean(c["used_tokens_before"] for c in calls),
        "mean_used_tokens_after": mean(c["used_tokens_after"] for c in calls),
        "most_gained": top(gained),
        "most_lost": top(lost),
        "details": calls,
    }
