"""Retrieval-quality harness: does POST /v1/context serve the evidence a question needs, under a budget?

    .venv/bin/python scripts/eval_recall.py [--budget 900] [--noise 120] [--split all|dev|heldout]
        [--limit-scopes N] [--embedder hashing|sentence-transformers] [--seed 0] [--out bench-output/quality.json]

For every scope of the labelled dataset (eval/dataset.jsonl, see eval/README.md) it:
 1. loads the scope through the public API, as a client would (in-process DRF APIClient, the configured
    database): a throw-away key for a fresh project `eval-<random>`, POST /v1/facts with the scope's facts
    mixed with --noise background facts of the same language (a sample seeded by --seed and the scope id),
    PATCH /v1/facts/{id} for facts that replace an earlier one, POST /v1/events. subject_id = scope id.
 2. asks POST /v1/context for each question at --budget, then GET /v1/inspect/{trace_id} for the ranking.
 3. ranks and packs the same items (the scope's active facts and its events, as stored) under the same budget
    and token estimate with three baselines: dense-only (cosine of the same embedder), lexical-only (Okapi
    BM25, k1=1.2, b=0.75) and their reciprocal-rank fusion (k=60).
 4. erases every subject it wrote (DELETE /v1/subjects/{id}) and deletes its key, also on error.

Metrics (docs/quality.md defines them): evidence recall under budget (macro over answerable questions), the
share of questions with all gold served, recall@1/5/10 and MRR of each system's ranking, the share of calls
that served nothing (overall and for no_answer questions), tokens per call, and hakimem's latency.

It prints a table and writes a JSON report (--out). Nothing but the dataset's own text is ever printed.
The module is importable: run(...) returns the report dict (tests/context/test_quality.py uses it). This is the
harness (the dataset, the API calls, the run); the baselines are in bench/baselines.py and the
report's metrics and tables in bench/quality_report.py.
"""

from __future__ import annotations

import json
import random
import secrets
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from bench.baselines import BM25, BM25_B, BM25_K1, RRF_K, bm25_tokens, order_by_score, pack, rrf
from bench.harness_client import client_with_own_key
from bench.quality_report import (
    DIAGNOSTIC,
    KS,
    SYSTEMS,
    failures,
    gains,
    summarise,
)

ROOT = Path(__file__).resolve().parent.parent

DEFAULT_DATASET = ROOT / "eval" / "dataset.jsonl"
DEFAULT_NOISE = ROOT / "eval" / "noise.jsonl"
DEFAULT_OUT = ROOT / "bench-output" / "quality.json"
DEFAULT_BUDGET = 900
DEFAULT_NOISE_PER_SCOPE = 120

_NOT_PACKABLE = ("conflict_open", "volatility_expired", "below_relevance_floor")
WRITE_BATCH = 500  # the API's batch limit (facts.writes.MAX_BATCH)
PAGE = 200  # the list endpoints' largest page
NOT_A_CANDIDATE = "not_a_candidate"  # a gold item hakimem's phase 1 never retrieved (no decision row)


class HarnessError(RuntimeError):
    """The API answered something the harness cannot go on with."""


# --- dataset ---------------------------------------------------------------------------------------------


def load_scopes(path: Path, *, split: str = "all", limit: int | None = None, scope_ids=None) -> list[dict]:
    scopes = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    if scope_ids:
        wanted = list(scope_ids)
        by_id = {s["scope"]: s for s in scopes}
        missing = [s for s in wanted if s not in by_id]
        if missing:
            raise HarnessError(f"unknown scope ids: {missing}")
        scopes = [by_id[s] for s in wanted]
    if split != "all":
        scopes = [s for s in scopes if s["split"] == split]
    return scopes[:limit] if limit else scopes


def load_noise(path: Path) -> dict[str, list[tuple[str, str]]]:
    """Noise lines by language, each with a stable external id (its line number in the file)."""
    by_lang: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            row = json.loads(line)
            by_lang[row["lang"]].append((f"noise:{number}", row["text"]))
    return by_lang


def noise_for(scope: dict, noise: dict, n: int, seed: int) -> list[tuple[str, str]]:
    """A deterministic sample of n noise facts of the scope's language, seeded by (seed, scope id)."""
    pool = noise.get(scope["lang"], [])
    if n <= 0 or not pool:
        return []
    return random.Random(f"{seed}:{scope['scope']}").sample(pool, min(n, len(pool)))


# --- loading through the API -----------------------------------------------------------------------------


@dataclass
class LoadedScope:
    scope: dict
    subject_id: str
    ext_of: dict = field(default_factory=dict)  # stored id -> external id ("f3", "e2", "noise:17")
    id_of: dict = field(default_factory=dict)  # external id -> stored id
    deduplicated: list = field(default_factory=list)  # external ids whose write answered deduplicated=true
    conflicted: list = field(default_factory=list)  # external ids whose write answered a conflict_set_id
    patch_fallbacks: int = 0
    blocked_ids: set = field(default_factory=set)  # stored ids in an open conflict set after loading
    open_conflicts: list = field(default_factory=list)  # {"signal", "members": [external ids]} per open set
    items: list = field(default_factory=list)  # (stored id, kind, text) of active facts and events, as stored
    text_of: dict = field(default_factory=dict)  # external id -> text (dataset and noise text only)


def _check(response, expected: int, what: str):
    if response.status_code != expected:
        try:
            body = response.json()
        except ValueError:
            body = response.content[:300]
        raise HarnessError(f"{what}: HTTP {response.status_code} {body}")
    return response.json()


def _list_all(client, path: str, params: dict, key: str) -> list[dict]:
    rows, cursor = [], None
    while True:
        query = {**params, "limit": PAGE, **({"cursor": cursor} if cursor else {})}
        body = _check(client.get(path, query), 200, f"GET {path}")
        rows += body[key]
        cursor = body.get("next_cursor")
        if not cursor:
            return rows


def _record_write(loaded: LoadedScope, ext_id: str, out: dict) -> None:
    loaded.id_of[ext_id] = out["id"]
    loaded.ext_of.setdefault(out["id"], ext_id)  # a deduplicated write keeps the first writer's name
    if out.get("deduplicated"):
        loaded.deduplicated.append(ext_id)
    if out.get("conflict_set_id"):
        loaded.conflicted.append(ext_id)


def load_scope(client, project_id: str, scope: dict, noise: list[tuple[str, str]], seed: int) -> LoadedScope:
    subject = scope["scope"]
    loaded = LoadedScope(scope=scope, subject_id=subject)
    base = {"project_id": project_id, "subject_id": subject}
    originals = [(f["id"], f["text"]) for f in scope["facts"] if not f.get("replaces")]
    replacements = [f for f in scope["facts"] if f.get("replaces")]
    mixed = originals + list(noise)
    random.Random(f"{seed}:{subject}:order").shuffle(mixed)  # noise mixed in, not appended
    loaded.text_of.update({ext: text for ext, text in mixed})
    loaded.text_of.update({f["id"]: f["text"] for f in replacements})
    loaded.text_of.update({e["id"]: e["text"] for e in scope["events"]})

    for start in range(0, len(mixed), WRITE_BATCH):
        chunk = mixed[start : start + WRITE_BATCH]
        body = _check(
            client.post("/v1/facts", {"facts": [{**base, "text": text} for _, text in chunk]}, format="json"),
            201,
            f"POST /v1/facts ({subject})",
        )
        for (ext_id, _), out in zip(chunk, body["facts"], strict=True):
            _record_write(loaded, ext_id, out)

    for fact in replacements:  # in dataset order: a replacement always follows the fact it replaces
        old_id = loaded.id_of[fact["replaces"]]
        response = client.patch(f"/v1/facts/{old_id}", {"text": fact["text"]}, format="json")
        if response.status_code == 409:  # no longer active (merged into an edited duplicate, or newest_wins)
            loaded.patch_fallbacks += 1
            response = client.post("/v1/facts", {**base, "text": fact["text"]}, format="json")
            _record_write(loaded, fact["id"], _check(response, 201, f"POST /v1/facts ({subject})"))
        else:
            _record_write(loaded, fact["id"], _check(response, 200, f"PATCH /v1/facts ({subject})"))

    events = scope["events"]
    for start in range(0, len(events), WRITE_BATCH):
        chunk = events[start : start + WRITE_BATCH]
        body = _check(
            client.post(
                "/v1/events",
                {"events": [{**base, "text": e["text"], "occurred_at": e["occurred_at"]} for e in chunk]},
                format="json",
            ),
            201,
            f"POST /v1/events ({subject})",
        )
        for e, out in zip(chunk, body["events"], strict=True):
            _record_write(loaded, e["id"], out)

    # What the store holds now, read back through the API: the baselines rank exactly these items.
    for row in _list_all(client, "/v1/facts", {**base, "status": "active"}, "facts"):
        loaded.items.append((row["id"], "fact", row["text"]))
    for row in _list_all(client, "/v1/events", base, "events"):
        loaded.items.append((row["id"], "episode", row["text"]))
    loaded.items.sort(key=lambda item: (item[1], loaded.ext_of.get(item[0], "~"), item[0]))  # stable order for ties

    for conflict in _list_all(client, "/v1/conflicts", {**base, "status": "open"}, "conflicts"):
        detail = _check(client.get(f"/v1/conflicts/{conflict['id']}"), 200, "GET /v1/conflicts/{id}")
        loaded.blocked_ids.update(m["fact_id"] for m in detail["members"])
        loaded.open_conflicts.append(
            {
                "scope": subject,
                "signal": detail["signal"],
                "similarity": detail["similarity"],
                "members": [loaded.ext_of.get(m["fact_id"], m["fact_id"]) for m in detail["members"]],
            }
        )
    return loaded


def erase_subject(client, project_id: str, subject_id: str) -> dict:
    response = client.delete(f"/v1/subjects/{subject_id}?project_id={project_id}")
    return _check(response, 200, f"DELETE /v1/subjects/{subject_id}")["deleted"]


# --- one question, every system --------------------------------------------------------------------------


def _ranks(ranking_ids: list, gold_ids: list) -> list[int | None]:
    position = {}
    for i, item in enumerate(ranking_ids, start=1):
        position.setdefault(item, i)
    return [position.get(g) for g in gold_ids]


def _outcome(
    gold_ext: list, gold_ids: list, ranking_ids: list, served_ids: list, used: int, loaded: LoadedScope
) -> dict:
    served = set(served_ids)
    ranks = _ranks(ranking_ids, gold_ids)
    gold_served = [g for g, sid in zip(gold_ext, gold_ids) if sid in served]
    answerable = bool(gold_ext)
    finite = [r for r in ranks if r is not None]
    return {
        "served": [loaded.ext_of.get(s, s) for s in served_ids],
        "gold_served": gold_served,
        "recall": len(gold_served) / len(gold_ext) if answerable else None,
        "all_gold": len(gold_served) == len(gold_ext) if answerable else None,
        "ranks": dict(zip(gold_ext, ranks)),
        "recall_at": {str(k): (sum(1 for r in finite if r <= k) / len(gold_ext)) if answerable else None for k in KS},
        "reciprocal_rank": (1.0 / min(finite) if finite else 0.0) if answerable else None,
        "empty": not served_ids,
        "tokens": used,
    }


def ask_hakimem(client, project_id: str, loaded: LoadedScope, question: dict, gold_ids: list, budget: int) -> dict:
    payload = {
        "project_id": project_id,
        "subject_id": loaded.subject_id,
        "query": question["text"],
        "budget_tokens": budget,
    }
    start = time.perf_counter()
    response = client.post("/v1/context", payload, format="json")
    wall_ms = (time.perf_counter() - start) * 1000.0
    packet = _check(response, 200, "POST /v1/context")
    trace = _check(client.get(f"/v1/inspect/{packet['trace_id']}"), 200, "GET /v1/inspect/{id}")
    decisions = trace["decisions"]
    # One ranking for facts and episodes: every decision by its score (ties: facts first, then their rank).
    ordered = sorted(decisions, key=lambda d: (-(d["score"] or 0.0), d["item_type"] != "fact", d["rank"]))
    served_ids = [f["id"] for f in packet["facts"]] + [e["id"] for e in packet["episodes"]]
    out = _outcome(
        question["gold"], gold_ids, [d["item_id"] for d in ordered], served_ids, packet["used_tokens"], loaded
    )
    reason_of = {d["item_id"]: d["reason_code"] for d in decisions}
    out["gold_reasons"] = {g: reason_of.get(sid, NOT_A_CANDIDATE) for g, sid in zip(question["gold"], gold_ids)}
    out["latency_ms"] = round(wall_ms, 3)
    out["server_latency_ms"] = trace.get("latency_ms")
    out["candidates"] = trace["packet"]["candidates"]
    out["warnings"] = packet["warnings"]
    out["episodes_served"] = len(packet["episodes"])
    out["multi_hop_served"] = sum(1 for f in packet["facts"] if f["reason_code"] == "multi_hop_expansion")
    packable = [d for d in ordered if d["reason_code"] not in _NOT_PACKABLE]
    by_score, used = pack([d["item_id"] for d in packable], {d["item_id"]: d["tokens"] for d in packable}, budget)
    diagnostic = _outcome(question["gold"], gold_ids, [d["item_id"] for d in ordered], by_score, used, loaded)
    return out, diagnostic


@dataclass
class ScopeIndex:
    """The baselines' view of one scope: every item embedded once, tokenised once."""

    ids: list
    vectors: np.ndarray
    bm25: BM25
    tokens: dict


def index_scope(loaded: LoadedScope, embed_cached: Callable, stop_words, estimate_tokens) -> ScopeIndex:
    texts = [text for _, _, text in loaded.items]
    return ScopeIndex(
        ids=[item_id for item_id, _, _ in loaded.items],
        vectors=embed_cached(texts),
        bm25=BM25([bm25_tokens(t, stop_words) for t in texts]),
        tokens={item_id: estimate_tokens(text) for item_id, _, text in loaded.items},
    )


def ask_baselines(
    index: ScopeIndex, qvec, question: dict, gold_ids: list, budget: int, loaded: LoadedScope, stop_words
) -> dict:
    dense = order_by_score(index.vectors @ np.asarray(qvec, dtype=np.float32))
    lexical = order_by_score(index.bm25.scores(bm25_tokens(question["text"], stop_words)), positive_only=True)
    fused = rrf([dense, lexical], len(index.ids))
    out = {}
    for name, ranking in (("dense", dense), ("bm25", lexical), ("rrf", fused)):
        ranking_ids = [index.ids[i] for i in ranking]
        served, used = pack(ranking_ids, index.tokens, budget)
        out[name] = _outcome(question["gold"], gold_ids, ranking_ids, served, used, loaded)
    return out


# --- the run ---------------------------------------------------------------------------------------------


def _default_client_factory(project_id: str):
    """A client with a fresh key of its own; returns (client, cleanup)."""
    return client_with_own_key(project_id, label="eval_recall (deleted when the run ends)")


def run(
    *,
    dataset: Path = DEFAULT_DATASET,
    noise_path: Path = DEFAULT_NOISE,
    noise: int = DEFAULT_NOISE_PER_SCOPE,
    budget: int = DEFAULT_BUDGET,
    split: str = "all",
    limit_scopes: int | None = None,
    scope_ids: list[str] | None = None,
    embedder: str | None = None,
    seed: int = 0,
    client_factory: Callable | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Load, ask, compare, erase; returns the report. Django must be set up (scripts/_django.py or pytest).

    client_factory(project_id) -> (client, cleanup) gives the API client; by default a fresh key is created
    for the project and deleted at the end."""
    from django.conf import settings
    from django.test.utils import override_settings

    overrides = {"HAKI_EMBED_PROVIDER": embedder} if embedder else {}
    with override_settings(**overrides):
        return _run(
            settings=settings,
            dataset=dataset,
            noise_path=noise_path,
            noise=noise,
            budget=budget,
            split=split,
            limit_scopes=limit_scopes,
            scope_ids=scope_ids,
            seed=seed,
            client_factory=client_factory or _default_client_factory,
            progress=progress or (lambda _msg: None),
        )


def _run(
    *, settings, dataset, noise_path, noise, budget, split, limit_scopes, scope_ids, seed, client_factory, progress
) -> dict:
    from context.config import recall_max_distance
    from context.scoring import estimate_tokens
    from facts.text import STOP_WORDS
    from hakimem.embeddings import get_embedder, thresholds

    started = time.perf_counter()
    scopes = load_scopes(dataset, split=split, limit=limit_scopes, scope_ids=scope_ids)
    noise_lines = load_noise(noise_path) if noise > 0 else {}
    embedder = get_embedder()
    vector_cache: dict[str, np.ndarray] = {}

    def embed_cached(texts: list[str]) -> np.ndarray:
        todo = list(dict.fromkeys(t for t in texts if t not in vector_cache))
        if todo:
            vector_cache.update(zip(todo, embedder.embed(todo)))
        return np.stack([vector_cache[t] for t in texts]) if texts else np.zeros((0, embedder.dim), dtype=np.float32)

    project_id = f"eval-{secrets.token_hex(6)}"
    client, cleanup = client_factory(project_id)
    records: list[dict] = []
    texts: dict[str, dict] = {}
    load_stats = Counter()
    blocked_gold: list[dict] = []
    open_conflicts: list[dict] = []
    pending_erase: list[str] = []
    erased = Counter()
    timings = Counter()
    try:
        for n, scope in enumerate(scopes, start=1):
            t0 = time.perf_counter()
            pending_erase.append(scope["scope"])
            scope_noise = noise_for(scope, noise_lines, noise, seed)
            loaded = load_scope(client, project_id, scope, scope_noise, seed)
            t1 = time.perf_counter()
            index = index_scope(loaded, embed_cached, STOP_WORDS, estimate_tokens)
            texts[scope["scope"]] = loaded.text_of
            load_stats.update(
                facts_written=sum(1 for f in scope["facts"] if not f.get("replaces")) + len(scope_noise),
                patches=sum(1 for f in scope["facts"] if f.get("replaces")),
                events_written=len(scope["events"]),
                deduplicated=len(loaded.deduplicated),
                conflicted_writes=len(loaded.conflicted),
                patch_fallbacks=loaded.patch_fallbacks,
                open_conflict_facts=len(loaded.blocked_ids),
                items_active=len(loaded.items),
            )
            open_conflicts += loaded.open_conflicts
            dataset_gold = {g for q in scope["questions"] for g in q["gold"]}
            for ext in sorted(dataset_gold):
                if loaded.id_of.get(ext) in loaded.blocked_ids:
                    blocked_gold.append({"scope": scope["scope"], "id": ext, "text": loaded.text_of.get(ext)})
            merged = [ext for ext in loaded.deduplicated if not ext.startswith("noise:")]
            load_stats.update(dataset_items_deduplicated=len(merged))

            t2 = time.perf_counter()
            for q in scope["questions"]:
                gold_ids = [loaded.id_of[g] for g in q["gold"]]
                record = {
                    "scope": scope["scope"],
                    "lang": scope["lang"],
                    "split": scope["split"],
                    "question_id": q["id"],
                    "type": q["type"],
                    "text": q["text"],
                    "gold": list(q["gold"]),
                    "gold_blocked": [g for g, sid in zip(q["gold"], gold_ids) if sid in loaded.blocked_ids],
                    "systems": {},
                }
                record["systems"]["hakimem"], diagnostic = ask_hakimem(client, project_id, loaded, q, gold_ids, budget)
                qvec = embedder.embed_query(
                    q["text"], project_id=project_id
                )  # the same (cached) vector the assembler used
                record["systems"].update(ask_baselines(index, qvec, q, gold_ids, budget, loaded, STOP_WORDS))
                record["systems"][DIAGNOSTIC] = diagnostic
                records.append(record)
            t3 = time.perf_counter()
            erased.update(erase_subject(client, project_id, scope["scope"]))
            pending_erase.remove(scope["scope"])
            timings.update(load_s=t1 - t0, index_s=t2 - t1, ask_s=t3 - t2, erase_s=time.perf_counter() - t3)
            progress(
                f"[{n}/{len(scopes)}] {scope['scope']}: {len(loaded.items)} items, load {t1 - t0:.1f}s, "
                f"questions {t3 - t2:.1f}s"
            )
    finally:
        try:
            for subject in list(pending_erase):
                erased.update(erase_subject(client, project_id, subject))
                pending_erase.remove(subject)
        finally:
            cleanup()

    summary = summarise(records)
    gold_items = sum(len({g for q in s["questions"] for g in q["gold"]}) for s in scopes)
    return {
        "config": {
            "dataset": str(Path(dataset).resolve().relative_to(ROOT))
            if Path(dataset).resolve().is_relative_to(ROOT)
            else str(dataset),
            "noise_per_scope": noise,
            "budget_tokens": budget,
            "split": split,
            "seed": seed,
            "scopes": [s["scope"] for s in scopes],
            "questions": len(records),
            "embedder": settings.HAKI_EMBED_PROVIDER,
            "recall_max_distance": recall_max_distance(),
            "conflict_policy": settings.HAKI_CONFLICT_POLICY,
            "conflict_min_similarity": thresholds().conflict_min_similarity,
            "duplicate_similarity": thresholds().duplicate_similarity,
            "bm25": {"k1": BM25_K1, "b": BM25_B},
            "rrf_k": RRF_K,
            "project_id": project_id,
            "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "duration_s": round(time.perf_counter() - started, 1),
            "phase_seconds": {k: round(v, 1) for k, v in sorted(timings.items())},
        },
        "load": {
            **dict(sorted(load_stats.items())),
            "gold_items": gold_items,
            "gold_blocked_by_open_conflict": len(blocked_gold),
            "gold_blocked": blocked_gold,
            "question_gold_pairs_blocked": sum(len(r["gold_blocked"]) for r in records),
            "open_conflicts": [
                {**c, "texts": [texts[c["scope"]].get(m) for m in c["members"]]} for c in open_conflicts
            ],
            "erased": dict(sorted(erased.items())),
            "left_behind": list(pending_erase),
        },
        "summary": summary,
        "gain_vs_baselines": {
            "overall": gains(summary),
            **{
                f"split:{split_name}": gains({s: {"x": summary[s]["by_split"][split_name]} for s in SYSTEMS}, "x")
                for split_name in summary["hakimem"]["by_split"]
            },
        },
        "failures": failures(records, texts),
        "questions": records,
    }
