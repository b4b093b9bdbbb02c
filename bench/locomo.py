"""Conversation memory on real multi-session chats (LoCoMo): does POST /v1/context serve the turns a
question rests on, under a budget, whichever way an application stores the conversation?

    .venv/bin/python scripts/eval_locomo.py [--data PATH] [--modes events,facts,extracted] [--budget 900[,300...]]
        [--embedder PROVIDER] [--max-questions N] [--inspect] [--out bench-output/locomo.json]

The data is LoCoMo (Maharana et al., 2024; CC BY-NC 4.0), read from outside the repository: by default
../shared/data/locomo-dev/locomo-dev.json beside the checkout, or $HAKI_LOCOMO_DATA. It is never copied here.

For each storage mode it writes every conversation through the public API (in-process APIClient, the
configured database), one scope per conversation (subject_id = the record's sample_id, in a fresh project
`locomo-<random>`):
- events:    every turn as an event, occurred_at = its session's date plus the turn's index in seconds;
- facts:     every turn as a fact (default category, kind and volatility);
- extracted: every LoCoMo observation (short facts a model extracted from the chat) as a fact, plus every
             turn as an event.
A turn's text is "[<session date>] <Speaker>: <text>" (+ " [shares image: <caption>]"), an observation's
"[<session date>] <text>"; each item carries the turn ids it rests on in metadata.dia_id(s).

Then it asks every question of categories 1-4 once at each --budget (one report per budget, the conversations
written once) and scores evidence recall: the share of a question's gold turn ids found among the served items'
metadata, averaged over questions. The same turns
are ranked, in the same run and the same process, by three baselines packed under the same budget in rank
order (the first item that does not fit ends the list): dense (cosine of the same embedder), BM25
(k1 1.5, b 0.75) and their reciprocal-rank fusion (k 60). It erases everything it wrote, also on error, unless
told to keep it (--keep): then each mode's project stays, its memory and its traces, a populated database to move
or inspect (docs/scaling.md ran the move from one server to a cluster on it). With --analyze it analyses the ranked
tables after each conversation is written and waits until the context path reads those statistics: every question
then weighs its words with the statistics of the store as written, not with whatever autovacuum last analysed (which
moves a plain run's figures by up to 0.02, and differently on one server and on a cluster).

This is the method of ../shared/tools/locomo_eval.py (which runs it over HTTP against `make run`); both
must agree within 0.01 on hakimem's figures. Nothing but figures and the dataset's ids is printed.
The module is importable: run(...) returns the report (tests/context/test_locomo.py runs a slice).
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from bench.baselines import BM25, bm25_tokens, order_by_score, rrf
from bench.harness_client import client_with_own_key

ROOT = Path(__file__).resolve().parent.parent

DEFAULT_DATA = Path(
    os.environ.get("HAKI_LOCOMO_DATA", ROOT.parent / "shared" / "data" / "locomo-dev" / "locomo-dev.json")
)
DEFAULT_OUT = ROOT / "bench-output" / "locomo.json"
DEFAULT_BUDGET = 900
MODES = {
    "events": "turns as events",
    "facts": "turns as facts",
    "extracted": "extracted facts + turns as events",
    "pipeline": "turns as events, facts extracted by the pipeline",
}
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}  # 5 (adversarial) is left out
BASELINES = ("dense", "bm25", "rrf")
SYSTEMS = ("hakimem", *BASELINES)
BM25_K1, BM25_B = 1.5, 0.75
WRITE_BATCH = 500  # the API's batch limit


class HarnessError(RuntimeError):
    """The API answered something the harness cannot go on with."""


# --- the data --------------------------------------------------------------------------------------------


@dataclass
class Turn:
    dia_id: str
    speaker: str
    session: int
    text: str
    occurred_at: datetime


@dataclass
class Observation:
    text: str
    dia_ids: list[str]
    speaker: str
    session: int


@dataclass
class Question:
    qid: str
    text: str
    category: int
    gold: list[str]


@dataclass
class Conversation:
    sample_id: str
    turns: list[Turn]
    observations: list[Observation]
    questions: list[Question]


_DIA_RE = re.compile(r"D:?(\d+):(\d+)")  # "D:11:26" is a known typo of "D11:26"
_ID_SEPARATORS = re.compile(r"[;,\s]+")
_DATE_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%I:%M %p on %B %d, %Y")


def dia_ids(raw) -> list[str]:
    """Turn ids as written in the data ('D8:6; D9:17', 'D30:05', nested lists) in canonical form."""
    out: list[str] = []
    for item in raw if isinstance(raw, list) else [raw]:
        if isinstance(item, list):
            out += dia_ids(item)
            continue
        for part in _ID_SEPARATORS.split(str(item).strip()):
            match = _DIA_RE.fullmatch(part)
            if match:
                out.append(f"D{int(match.group(1))}:{int(match.group(2))}")
    return list(dict.fromkeys(out))


def session_date(text: str) -> datetime:
    text = " ".join(text.split())
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(text, fmt).replace(tzinfo=UTC)  # the data has no zone
        except ValueError:
            pass
    raise HarnessError(f"unreadable session date: {text!r}")


def load_conversations(path: Path, samples: list[str] | None = None, max_questions: int = 0) -> list[Conversation]:
    import json

    out = []
    for record in json.loads(Path(path).read_text(encoding="utf-8")):
        if samples and record["sample_id"] not in samples:
            continue
        conv = record["conversation"]
        sessions = sorted(int(k.split("_")[1]) for k in conv if re.fullmatch(r"session_\d+", k))
        turns, dates = [], {}
        for n in sessions:
            date_text = " ".join(str(conv[f"session_{n}_date_time"]).split())
            start = session_date(date_text)
            dates[n] = date_text
            for i, t in enumerate(conv[f"session_{n}"]):
                text = f"[{date_text}] {t['speaker']}: {t.get('text', '').strip()}"
                if t.get("blip_caption"):
                    text += f" [shares image: {t['blip_caption'].strip()}]"
                turns.append(Turn(dia_ids(t["dia_id"])[0], t["speaker"], n, text, start + timedelta(seconds=i)))
        known = {t.dia_id for t in turns}
        observations = []
        for key, per_speaker in (record.get("observation") or {}).items():
            match = re.fullmatch(r"session_(\d+)_observation", key)
            if not match or int(match.group(1)) not in dates:
                continue
            n = int(match.group(1))
            for speaker, items in per_speaker.items():
                for item in items:
                    cited = [d for d in dia_ids(item[1] if len(item) > 1 else []) if d in known]
                    if cited:
                        observations.append(Observation(f"[{dates[n]}] {item[0].strip()}", cited, speaker, n))
        questions = []
        for i, qa in enumerate(record.get("qa", [])):
            gold = [d for d in dia_ids(qa.get("evidence", [])) if d in known]
            if qa.get("category") in CATEGORIES and gold:
                questions.append(Question(f"{record['sample_id']}:q{i}", qa["question"], qa["category"], gold))
        if max_questions:
            questions = questions[:max_questions]
        out.append(Conversation(record["sample_id"], turns, observations, questions))
    return out


# --- writing a conversation through the API -------------------------------------------------------------


def _check(response, expected: int, what: str):
    if response.status_code != expected:
        raise HarnessError(f"{what}: HTTP {response.status_code} {response.content[:300]!r}")
    return response.json()


def _write(client, kind: str, rows: list[dict], cited: list[list[str]], dia_of: dict, written: Counter) -> None:
    for start in range(0, len(rows), WRITE_BATCH):
        chunk = rows[start : start + WRITE_BATCH]
        body = _check(client.post(f"/v1/{kind}", {kind: chunk}, format="json"), 201, f"POST /v1/{kind}")
        for out, ids in zip(body[kind], cited[start : start + WRITE_BATCH], strict=True):
            dia_of.setdefault(out["id"], ids)
            written["deduplicated"] += bool(out.get("deduplicated"))
            written["conflicted"] += bool(out.get("conflict_set_id"))
        written[kind] += len(chunk)


def replay_answers(conv: Conversation) -> dict[str, list[dict]]:
    """What the stand-in extractor answers for each turn's event: the observations resting on that turn (each
    observation once, on the first turn it cites), as the `extracted` mode writes them."""
    text_of = {t.dia_id: t.text for t in conv.turns}
    answers: dict[str, list[dict]] = defaultdict(list)
    for o in conv.observations:
        answers[text_of[o.dia_ids[0]]].append({"text": o.text, "category": "", "confidence": 0.9})
    return dict(answers)


def _extract_through_pipeline(client, base: dict, conv: Conversation, dia_of: dict, written: Counter) -> None:
    """The events' extraction jobs run by the worker; then the facts it wrote are credited with the turn ids of
    the observations they hold (the stand-in returns observation texts unchanged)."""
    from ingest.management.commands.extraction_worker import run_worker

    run_worker(once=True)
    observations: dict[str, list[str]] = defaultdict(list)
    for o in conv.observations:
        observations[o.text] += [d for d in o.dia_ids if d not in observations[o.text]]
    events, cursor = [], None
    while True:
        page = _check(
            client.get("/v1/events", {**base, "limit": 200, **({"cursor": cursor} if cursor else {})}),
            200,
            "GET /v1/events",
        )
        events += page["events"]
        cursor = page.get("next_cursor")
        if not cursor:
            break
    statuses = Counter(e["extraction"]["status"] if e["extraction"] else "off" for e in events)
    written.update({f"extraction_{k}": v for k, v in statuses.items()})
    fact_ids = {fid for e in events if e["extraction"] for fid in e["extraction"]["fact_ids"]}
    written["extracted_facts"] = len(fact_ids)
    for fid in fact_ids:
        body = _check(client.get(f"/v1/facts/{fid}"), 200, "GET /v1/facts/{id}")
        dia_of.setdefault(fid, observations.get(body["text"], []))


def load_conversation(client, project_id: str, conv: Conversation, mode: str, dia_of: dict) -> dict:
    base = {"project_id": project_id, "subject_id": conv.sample_id}
    written: Counter = Counter()
    turn_rows = [
        {**base, "text": t.text, "metadata": {"dia_id": t.dia_id, "speaker": t.speaker, "session": t.session}}
        for t in conv.turns
    ]
    turn_ids = [[t.dia_id] for t in conv.turns]
    if mode in ("events", "extracted", "pipeline"):
        events = [{**row, "occurred_at": t.occurred_at.isoformat()} for row, t in zip(turn_rows, conv.turns)]
        _write(client, "events", events, turn_ids, dia_of, written)
    if mode == "pipeline":
        _extract_through_pipeline(client, base, conv, dia_of, written)
    if mode == "facts":
        _write(client, "facts", turn_rows, turn_ids, dia_of, written)
    if mode == "extracted":
        facts = [
            {
                **base,
                "text": o.text,
                "metadata": {
                    "dia_id": ", ".join(o.dia_ids),
                    "dia_ids": o.dia_ids,
                    "speaker": o.speaker,
                    "session": o.session,
                },
            }
            for o in conv.observations
        ]
        _write(client, "facts", facts, [o.dia_ids for o in conv.observations], dia_of, written)
    conflicts = _check(client.get("/v1/conflicts", {**base, "status": "open", "limit": 200}), 200, "GET /v1/conflicts")
    written["open_conflict_sets"] = len(conflicts["conflicts"])
    return dict(written)


# --- asking ----------------------------------------------------------------------------------------------


def _recall(gold: list[str], served: set[str]) -> float:
    return sum(1 for g in gold if g in served) / len(gold)


def pack_in_order(ranking: list[int], tokens: list[int], budget: int) -> list[int]:
    """The reference method's packing: rank order while items fit; the first that does not fit ends it."""
    served, used = [], 0
    for i in ranking:
        if used + tokens[i] > budget:
            break
        served.append(i)
        used += tokens[i]
    return served


@dataclass
class TurnIndex:
    """The baselines' view of one conversation: its turns embedded and tokenised once."""

    dia_ids: list[str]
    vectors: np.ndarray
    bm25: BM25
    tokens: list[int]


def ask_hakimem(
    client, project_id: str, conv: Conversation, q: Question, budget: int, dia_of: dict, inspect: bool
) -> dict:
    payload = {"project_id": project_id, "subject_id": conv.sample_id, "query": q.text, "budget_tokens": budget}
    start = time.perf_counter()
    packet = _check(client.post("/v1/context", payload, format="json"), 200, "POST /v1/context")
    latency = (time.perf_counter() - start) * 1000.0
    items = packet["facts"] + packet["episodes"]
    # An item the harness wrote names its turns in metadata; a fact the extraction pipeline wrote is credited
    # with its observation's turns (dia_of).
    served = {
        d
        for item in items
        for d in dia_ids([item["metadata"].get("dia_id", []), item["metadata"].get("dia_ids", [])])
        or dia_of.get(item["id"], [])
    }
    out = {
        "recall": _recall(q.gold, served),
        "latency_ms": latency,
        "status": packet["status"],
        "items": len(items),
        "episodes": len(packet["episodes"]),
        "used_tokens": packet["used_tokens"],
    }
    if inspect:  # why each gold turn was or was not served: the best decision on any item citing it
        from traces.models import SERVED_REASONS

        trace = _check(client.get(f"/v1/inspect/{packet['trace_id']}"), 200, "GET /v1/inspect/{id}")
        best: dict[str, str] = {}
        for d in trace["decisions"]:
            for dia in dia_of.get(d["item_id"], []):
                if dia in q.gold and best.get(dia) not in SERVED_REASONS:
                    best[dia] = d["reason_code"]
        out["gold_reasons"] = [best.get(g, "not_a_candidate") for g in q.gold]
    return out


def ask_baselines(index: TurnIndex, qvec, q: Question, budget: int, stop_words) -> dict:
    dense = order_by_score(index.vectors @ np.asarray(qvec, dtype=np.float32))
    lexical = order_by_score(index.bm25.scores(bm25_tokens(q.text, stop_words)), positive_only=True)
    out = {}
    for name, ranking in (("dense", dense), ("bm25", lexical), ("rrf", rrf([dense, lexical], len(index.dia_ids)))):
        served = {index.dia_ids[i] for i in pack_in_order(ranking, index.tokens, budget)}
        out[name] = {"recall": _recall(q.gold, served)}
    return out


# --- the run ---------------------------------------------------------------------------------------------


def _mean(values) -> float | None:
    values = list(values)
    return round(sum(values) / len(values), 4) if values else None


def summarise(records: list[dict]) -> dict:
    out = {}
    for system in SYSTEMS:
        by_cat = defaultdict(list)
        for r in records:
            by_cat[CATEGORIES[r["category"]]].append(r["systems"][system]["recall"])
        out[system] = {
            "evidence_recall": _mean(r["systems"][system]["recall"] for r in records),
            "by_category": {name: _mean(by_cat[name]) for name in CATEGORIES.values() if by_cat[name]},
        }
    hk = [r["systems"]["hakimem"] for r in records]
    latencies = [h["latency_ms"] for h in hk]
    out["hakimem"].update(
        {
            "latency_ms_p50": round(float(np.percentile(latencies, 50)), 2) if latencies else None,
            "latency_ms_p95": round(float(np.percentile(latencies, 95)), 2) if latencies else None,
            "items_per_call": _mean(h["items"] for h in hk),
            "episodes_per_call": _mean(h["episodes"] for h in hk),
            "tokens_per_call": _mean(h["used_tokens"] for h in hk),
            "status": dict(Counter(h["status"] for h in hk)),
        }
    )
    if hk and "gold_reasons" in hk[0]:
        out["hakimem"]["gold_outcomes"] = dict(
            Counter(reason for h in hk for reason in h["gold_reasons"]).most_common()
        )
    return out


def _default_client_factory(project_id: str):
    """A client with a fresh key of its own; returns (client, cleanup)."""
    return client_with_own_key(project_id, label="eval_locomo (deleted when the run ends)")


def run(*, budget: int = DEFAULT_BUDGET, **kw) -> dict:
    """Load, ask, compare and erase, for each mode; returns the report. Django must be set up."""
    return run_budgets(budgets=(budget,), **kw)[0]


def run_budgets(
    *,
    budgets=(DEFAULT_BUDGET,),
    data: Path = DEFAULT_DATA,
    modes=tuple(MODES),
    embedder: str | None = None,
    samples: list[str] | None = None,
    max_questions: int = 0,
    inspect: bool = False,
    keep: bool = False,
    analyze: bool = False,
    progress=None,
) -> list[dict]:
    """run() at each budget over one load of each mode: one report per budget, in the order given."""
    from django.test.utils import override_settings

    with override_settings(**({"HAKI_EMBED_PROVIDER": embedder} if embedder else {})):
        return _run(
            data=Path(data),
            modes=modes,
            budgets=tuple(budgets),
            samples=samples,
            max_questions=max_questions,
            inspect=inspect,
            keep=keep,
            analyze=analyze,
            progress=progress or (lambda _msg: None),
        )


def _run(*, data, modes, budgets, samples, max_questions, inspect, keep, analyze, progress) -> list[dict]:
    from django.conf import settings

    from context.config import recall_max_distance
    from context.scoring import estimate_tokens
    from facts.text import STOP_WORDS
    from hakimem.embeddings import get_embedder

    conversations = load_conversations(data, samples, max_questions)
    embedder = get_embedder()
    indexes = {
        c.sample_id: TurnIndex(
            dia_ids=[t.dia_id for t in c.turns],
            vectors=np.asarray(embedder.embed([t.text for t in c.turns])),
            bm25=BM25([bm25_tokens(t.text, STOP_WORDS) for t in c.turns], k1=BM25_K1, b=BM25_B),
            tokens=[estimate_tokens(t.text) for t in c.turns],
        )
        for c in conversations
    }
    qvecs = {
        q.qid: v
        for c in conversations
        for q, v in zip(c.questions, embedder.embed([q.text for q in c.questions], queries=True))
    }
    reports = [
        {
            "config": {
                "data": str(data),
                "budget": budget,
                "embedder": settings.HAKI_EMBED_PROVIDER,
                "modes": list(modes),
                "recall_max_distance": recall_max_distance(),
                "conversations": [c.sample_id for c in conversations],
                "questions": sum(len(c.questions) for c in conversations),
            },
            "modes": {},
        }
        for budget in budgets
    ]
    for mode in modes:
        project_id = f"locomo-{secrets.token_hex(5)}"
        client, cleanup = _default_client_factory(project_id)
        records, load, dia_of = {budget: [] for budget in budgets}, {}, {}
        with contextlib.ExitStack() as stack:
            if mode == "pipeline":
                _replay_through_extractor(stack, conversations)
            else:  # the other modes write directly, whatever the environment says
                from django.test.utils import override_settings

                stack.enter_context(override_settings(HAKI_EXTRACTOR_URL=""))
            _run_mode(
                mode,
                conversations,
                client,
                project_id,
                budgets,
                inspect,
                indexes,
                qvecs,
                records,
                load,
                dia_of,
                progress,
                cleanup,
                keep,
                analyze,
            )
        for report, budget in zip(reports, budgets, strict=True):
            summary = summarise(records[budget])
            report["modes"][mode] = {"load": load, "summary": summary, "records": records[budget]}
            if keep:
                report["modes"][mode]["project_id"] = project_id
        progress(f"{mode}: done" + (f", kept in project {project_id}" if keep else ""))
    return reports


def _replay_through_extractor(stack: contextlib.ExitStack, conversations: list[Conversation]) -> None:
    from django.test.utils import override_settings

    from bench.replay_extractor import ReplayExtractor

    answers = {text: items for c in conversations for text, items in replay_answers(c).items()}
    server = stack.enter_context(ReplayExtractor(answers))
    stack.enter_context(
        override_settings(
            HAKI_EXTRACTOR_URL=server.url,
            HAKI_EXTRACTOR_MODEL="replay",
            HAKI_EXTRACTOR_API_KEY="",
            HAKI_EXTRACTOR_RETRY_WAIT=0,
        )
    )


def _run_mode(
    mode,
    conversations,
    client,
    project_id,
    budgets,
    inspect,
    indexes,
    qvecs,
    records,
    load,
    dia_of,
    progress,
    cleanup,
    keep=False,
    analyze=False,
) -> None:
    from facts.text import STOP_WORDS

    try:
        for conv in conversations:
            started = time.perf_counter()
            load[conv.sample_id] = load_conversation(client, project_id, conv, mode, dia_of)
            load[conv.sample_id]["seconds"] = round(time.perf_counter() - started, 1)
            if analyze:
                _statistics_settle()
            progress(f"{mode}: {conv.sample_id} written {load[conv.sample_id]}")
            for q in conv.questions:
                for budget in budgets:
                    systems = {"hakimem": ask_hakimem(client, project_id, conv, q, budget, dia_of, inspect)}
                    systems.update(ask_baselines(indexes[conv.sample_id], qvecs[q.qid], q, budget, STOP_WORDS))
                    records[budget].append({"qid": q.qid, "category": q.category, "systems": systems})
    finally:
        for conv in [] if keep else conversations:
            client.delete(f"/v1/subjects/{conv.sample_id}?project_id={project_id}")
        cleanup()


def _statistics_settle() -> None:
    """ANALYZE the tables the context path weighs words with (on Citus: every shard), then wait until a call reads
    these statistics as settled: STATS_SETTLE_SECONDS after an ANALYZE, and on a cluster past the version's recheck."""
    from django.db import connection

    from context.retrieval import CITUS_STATS_RECHECK_SECONDS, RANKED_TABLES, STATS_SETTLE_SECONDS
    from hakimem.citus import on_citus

    with connection.cursor() as cursor:
        for table in RANKED_TABLES:
            cursor.execute(f"ANALYZE {table}")  # names from the code, never from input
    time.sleep(max(STATS_SETTLE_SECONDS, CITUS_STATS_RECHECK_SECONDS if on_citus() else 0.0) + 1.0)


def format_report(report: dict) -> str:
    lines = [
        f"LoCoMo evidence recall under {report['config']['budget']} tokens, {report['config']['questions']} questions, "
        f"embedder {report['config']['embedder']}, relevance floor {report['config'].get('recall_max_distance') or 'off'}"
    ]
    cats = list(CATEGORIES.values())
    for mode, body in report["modes"].items():
        s = body["summary"]
        lines.append(f"\n{MODES[mode]}")
        lines.append(f"  {'system':8} {'recall':>7} " + " ".join(f"{c:>11}" for c in cats))
        for system in SYSTEMS:
            row = s[system]
            cells = " ".join(f"{row['by_category'].get(c, float('nan')):11.3f}" for c in cats)
            lines.append(f"  {system:8} {row['evidence_recall']:7.3f} {cells}")
        hk = s["hakimem"]
        sets = sum(v.get("open_conflict_sets", 0) for v in body["load"].values())
        lines.append(
            f"  hakimem: {hk['items_per_call']} items ({hk['episodes_per_call']} episodes), "
            f"{hk['tokens_per_call']} tokens a call; status {hk['status']}; open conflict sets {sets}; "
            f"latency p50 {hk['latency_ms_p50']} ms p95 {hk['latency_ms_p95']} ms (in-process)"
        )
        if "gold_outcomes" in hk:
            lines.append(f"  gold turns' best decision: {hk['gold_outcomes']}")
    return "\n".join(lines)
