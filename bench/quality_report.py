"""The quality harness's report (bench/recall.py): the metrics of every system aggregated from the
per-question records (overall, by question type, language and split), hakimem's gain over each baseline, the
questions that lost gold evidence, and the text tables printed at the end of a run. docs/quality.md defines
the metrics. No service, no database: records in, numbers and text out.
"""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np

BASELINES = ("dense", "bm25", "rrf")
# Diagnostic, not a product: hakimem's own ranking (the trace's scores) packed as one list under the same budget,
# i.e. what the packet would hold if facts, multi-hop facts and episodes competed on score alone. The gap
# between it and "hakimem" is evidence lost to the packing order, not to the ranking.
DIAGNOSTIC = "hk_by_score"
SYSTEMS = ("hakimem", *BASELINES, DIAGNOSTIC)
KS = (1, 5, 10)
QUESTION_TYPES = ("paraphrase", "exact_name", "temporal", "multi_hop", "update", "distractor", "no_answer")


# --- aggregation -----------------------------------------------------------------------------------------


def _mean(values) -> float | None:
    values = [v for v in values if v is not None]
    return round(sum(values) / len(values), 4) if values else None


def _percentile(values, q) -> float | None:
    return round(float(np.percentile(values, q)), 2) if values else None


def aggregate(records: list[dict], system: str) -> dict:
    outs = [r["systems"][system] for r in records]
    answerable = [o for o, r in zip(outs, records) if r["gold"]]
    no_answer = [o for o, r in zip(outs, records) if not r["gold"]]
    gold_total = sum(len(r["gold"]) for r in records)
    metrics = {
        "questions": len(records),
        "answerable": len(answerable),
        "evidence_recall": _mean(o["recall"] for o in answerable),
        "evidence_recall_micro": round(sum(len(o["gold_served"]) for o in answerable) / gold_total, 4)
        if gold_total
        else None,
        "all_gold": _mean(float(o["all_gold"]) for o in answerable),
        **{f"r@{k}": _mean(o["recall_at"][str(k)] for o in answerable) for k in KS},
        "mrr": _mean(o["reciprocal_rank"] for o in answerable),
        "empty": _mean(float(o["empty"]) for o in outs),
        "no_answer_questions": len(no_answer),
        "no_answer_empty": _mean(float(o["empty"]) for o in no_answer),
        "tokens_per_call": _mean(o["tokens"] for o in outs),
    }
    if system == "hakimem":
        latencies = [o["latency_ms"] for o in outs]
        metrics["latency_ms_p50"] = _percentile(latencies, 50)
        metrics["latency_ms_p95"] = _percentile(latencies, 95)
        metrics["candidates_per_call"] = _mean(o["candidates"] for o in outs)
        metrics["episodes_per_call"] = _mean(o["episodes_served"] for o in outs)
        metrics["multi_hop_facts_per_call"] = _mean(o["multi_hop_served"] for o in outs)
        reasons = Counter(reason for o in answerable for reason in o["gold_reasons"].values())
        metrics["gold_outcomes"] = dict(sorted(reasons.items()))
    return metrics


def _group(records, key) -> dict[str, list]:
    groups: dict[str, list] = defaultdict(list)
    for r in records:
        groups[r[key]].append(r)
    return groups


def summarise(records: list[dict]) -> dict:
    out = {}
    for system in SYSTEMS:
        by_type = _group(records, "type")
        out[system] = {
            "overall": aggregate(records, system),
            "by_type": {t: aggregate(by_type[t], system) for t in QUESTION_TYPES if t in by_type},
            "by_lang": {k: aggregate(v, system) for k, v in sorted(_group(records, "lang").items())},
            "by_split": {k: aggregate(v, system) for k, v in sorted(_group(records, "split").items())},
            "by_split_type": {
                split: {
                    t: aggregate([r for r in rs if r["type"] == t], system)
                    for t in QUESTION_TYPES
                    if any(r["type"] == t for r in rs)
                }
                for split, rs in sorted(_group(records, "split").items())
            },
        }
    return out


def gains(summary: dict, part: str = "overall") -> dict:
    """hakimem's evidence recall divided by each baseline's (None when the baseline served no evidence)."""
    ours = summary["hakimem"][part]["evidence_recall"]
    out = {}
    for name in BASELINES:
        theirs = summary[name][part]["evidence_recall"]
        out[name] = round(ours / theirs, 3) if ours is not None and theirs else None
    return out


def failures(records: list[dict], texts: dict, limit_served: int = 5) -> list[dict]:
    """hakimem's answerable questions that lost gold evidence, with what was served first instead."""
    out = []
    for r in records:
        o = r["systems"]["hakimem"]
        if not r["gold"] or o["all_gold"]:
            continue
        t = texts[r["scope"]]
        out.append(
            {
                "scope": r["scope"],
                "question_id": r["question_id"],
                "type": r["type"],
                "split": r["split"],
                "question": r["text"],
                "missing": [
                    {"id": g, "text": t.get(g), "reason": o["gold_reasons"][g], "rank": o["ranks"][g]}
                    for g in r["gold"]
                    if g not in o["gold_served"]
                ],
                "served_first": [{"id": s, "text": t.get(s)} for s in o["served"][:limit_served]],
                "baselines_all_gold": [name for name in BASELINES if r["systems"][name]["all_gold"]],
            }
        )
    return out


# --- printing --------------------------------------------------------------------------------------------

_COLUMNS = (
    ("evidence_recall", "recall"),
    ("all_gold", "all-gold"),
    ("r@1", "R@1"),
    ("r@5", "R@5"),
    ("r@10", "R@10"),
    ("mrr", "MRR"),
    ("empty", "empty"),
    ("no_answer_empty", "empty(na)"),
    ("tokens_per_call", "tok/call"),
)


def _fmt(value, width: int = 8) -> str:
    if value is None:
        return "-".rjust(width)
    if isinstance(value, float) and value < 10:
        return f"{value:.3f}".rjust(width)
    return f"{value:.0f}".rjust(width) if isinstance(value, float) else str(value).rjust(width)


def _table(title: str, rows: dict[str, dict]) -> list[str]:
    lines = [title, "  " + "system".ljust(12) + "".join(label.rjust(10) for _, label in _COLUMNS)]
    for system, m in rows.items():
        lines.append("  " + system.ljust(12) + "".join(_fmt(m.get(key), 10) for key, _ in _COLUMNS))
    return lines


def format_report(report: dict) -> str:
    cfg, load, summary = report["config"], report["load"], report["summary"]
    lines = [
        f"hakimem retrieval quality: {len(cfg['scopes'])} scopes, {cfg['questions']} questions, budget {cfg['budget_tokens']} tokens, "
        f"noise {cfg['noise_per_scope']}/scope, embedder {cfg['embedder']}, seed {cfg['seed']}, {cfg['duration_s']}s",
        f"HAKI_RECALL_MAX_DISTANCE={cfg['recall_max_distance']} ({'off' if not cfg['recall_max_distance'] else 'on'}), "
        f"conflict policy {cfg['conflict_policy']}",
        f"load: {load.get('facts_written', 0)} facts, {load.get('patches', 0)} replacements, {load.get('events_written', 0)} events; "
        f"deduplicated writes {load.get('deduplicated', 0)} (dataset items {load.get('dataset_items_deduplicated', 0)}), "
        f"writes that opened/joined a conflict set {load.get('conflicted_writes', 0)}, facts left in open conflicts "
        f"{load.get('open_conflict_facts', 0)}; gold items blocked by an open conflict: {load['gold_blocked_by_open_conflict']} "
        f"of {load['gold_items']}",
        "",
    ]
    lines += _table(
        "overall (recall, all-gold, R@k, MRR over answerable questions; empty over all calls, empty(na) over no_answer)",
        {s: summary[s]["overall"] for s in SYSTEMS},
    )
    for split_name in summary["hakimem"]["by_split"]:
        lines += [""] + _table(f"split {split_name}", {s: summary[s]["by_split"][split_name] for s in SYSTEMS})
    types = [t for t in QUESTION_TYPES if t in summary["hakimem"]["by_type"] and t != "no_answer"]
    for title, part in (("evidence recall by question type", None),) + tuple(
        (f"evidence recall by question type, split {s}", s) for s in summary["hakimem"]["by_split"]
    ):
        lines += ["", title, "  " + "system".ljust(12) + "".join(t[:10].rjust(11) for t in types)]
        for system in SYSTEMS:
            source = summary[system]["by_type"] if part is None else summary[system]["by_split_type"][part]
            lines.append(
                "  " + system.ljust(12) + "".join(_fmt(source.get(t, {}).get("evidence_recall"), 11) for t in types)
            )
    lines += [
        "",
        "evidence recall by language",
        "  " + "system".ljust(12) + "".join(k.rjust(10) for k in summary["hakimem"]["by_lang"]),
    ]
    for system in SYSTEMS:
        lines.append(
            "  "
            + system.ljust(12)
            + "".join(_fmt(m["evidence_recall"], 10) for m in summary[system]["by_lang"].values())
        )
    h = summary["hakimem"]["overall"]
    lines += [
        "",
        f"{DIAGNOSTIC} is a diagnostic, not a system: hakimem's trace ranking packed as one list under the same budget "
        "(the gap to hakimem is evidence lost to the packing order, not to the ranking).",
        "hakimem recall gain (hakimem / baseline evidence recall): "
        + ", ".join(f"{k} {v if v is not None else '-'}" for k, v in report["gain_vs_baselines"]["overall"].items()),
    ]
    for key, value in report["gain_vs_baselines"].items():
        if key != "overall":
            lines.append(f"  {key}: " + ", ".join(f"{k} {v if v is not None else '-'}" for k, v in value.items()))
    lines += [
        f"hakimem latency per call (wall, in-process): p50 {h['latency_ms_p50']} ms, p95 {h['latency_ms_p95']} ms; "
        f"candidates scored per call {h['candidates_per_call']}; per packet: {h['episodes_per_call']} episodes, "
        f"{h['multi_hop_facts_per_call']} multi-hop facts",
        "what happened to hakimem's gold items: " + ", ".join(f"{k} {v}" for k, v in h["gold_outcomes"].items()),
    ]
    return "\n".join(lines)


def format_failures(report: dict, limit: int) -> str:
    lines = [f"hakimem questions missing gold evidence ({len(report['failures'])}; first {limit}):"]
    for f in report["failures"][:limit]:
        lines.append(f"- {f['scope']}/{f['question_id']} [{f['type']}] {f['question']}")
        for m in f["missing"]:
            lines.append(f"    missing {m['id']} ({m['reason']}, rank {m['rank']}): {m['text']}")
        for s in f["served_first"][:3]:
            lines.append(f"    served  {s['id']}: {s['text']}")
    return "\n".join(lines)
