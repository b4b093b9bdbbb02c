"""What query-time contradiction detection (context.contradictions.find_contradictions) costs a context call, at
64 and 128 candidates, in one process against its own embedded server (var/pgdata-bench-contra, or HAKI_PGDATA),
with the real embedder (all-MiniLM-L6-v2: how many pairs pass the 0.75 threshold depends on it).

    .venv/bin/python scripts/bench_contradictions.py [--queries 40]

Two scopes:
- realistic: every fact of the quality set (eval/dataset.jsonl) and its noise (eval/noise.jsonl) in one scope,
  asked the set's questions; the candidates are the call's own (context.retrieval.fact_candidates).
- chat: the turns of the first LoCoMo development conversation stored as facts ("Speaker: text"), asked its
  questions, where MiniLM puts many pairs of turns above 0.75 (../shared/data/locomo-dev/locomo-dev.json or
  $HAKI_LOCOMO_DATA; skipped without it).
- worst case: 128 facts "Paul lives in <city>." that all contradict each other above the threshold, every pair
  through the rules.
Prints per call the wall time (p50, p95) of the whole detection and of its SQL alone, and the pairs above the
threshold and contradictions found. It erases its project at the end.
It needs Django set up before it is imported: its command line, scripts/bench_contradictions.py, does that first.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path

from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from context import retrieval
from context.contradictions import find_contradictions
from facts.models import Fact
from facts.selectors import volatility_cutoffs
from privacy.services import project_erase
from facts.text import text_hash
from hakimem.embeddings import get_embedder, thresholds

ROOT = Path(__file__).resolve().parent.parent

PROJECT = "bench-contradictions"
CITIES = (
    "Nantes Bordeaux Lyon Lille Rennes Brest Nice Toulouse Dijon Metz Reims Tours Angers Caen Rouen Nancy Pau "
    "Limoges Amiens Besançon Grenoble Avignon Nîmes Perpignan Orléans Poitiers Valence Annecy Vannes Lorient "
    "Quimper Cherbourg"
).split()


def _store(subject: str, texts: list[str]) -> None:
    now = timezone.now()
    vectors = get_embedder().embed(texts)
    Fact.objects.bulk_create(
        [
            Fact(
                project_id=PROJECT,
                subject_id=subject,
                text=t,
                text_hash=text_hash(t),
                embedding=v,
                recorded_from=now - timezone.timedelta(seconds=i),
                last_confirmed_at=now,
            )
            for i, (t, v) in enumerate(zip(texts, vectors))
        ],
        batch_size=500,
    )


def _measure(subject: str, calls: list[list], limit: int) -> dict:
    retrieval.CONTRADICTION_MAX_CANDIDATES = limit
    whole, sql, pairs, found = [], [], [], []
    for candidates in calls:
        started = time.perf_counter()
        found.append(len(find_contradictions(project_id=PROJECT, subject_id=subject, candidates=candidates)))
        whole.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        pairs.append(
            len(
                retrieval.similar_pairs(
                    project_id=PROJECT,
                    subject_id=subject,
                    ids=[c.id for c in candidates[:limit]],
                    min_similarity=thresholds().conflict_min_similarity,
                )
            )
        )
        sql.append((time.perf_counter() - started) * 1000)
    p = lambda xs, q: sorted(xs)[min(len(xs) - 1, int(len(xs) * q))]  # noqa: E731
    return {
        "p50": statistics.median(whole),
        "p95": p(whole, 0.95),
        "sql_p50": statistics.median(sql),
        "sql_p95": p(sql, 0.95),
        "pairs": statistics.mean(pairs),
        "found": statistics.mean(found),
        "candidates": statistics.mean(min(len(c), limit) for c in calls),
    }


def run(*, queries: int) -> None:
    call_command("migrate", verbosity=0)
    project_erase(project_id=PROJECT)
    scopes = [json.loads(line) for line in (ROOT / "eval" / "dataset.jsonl").open()]
    noise = [json.loads(line)["text"] for line in (ROOT / "eval" / "noise.jsonl").open()]
    texts = list(dict.fromkeys([f["text"] for s in scopes for f in s["facts"]] + noise))
    _store("realistic", texts)
    locomo = Path(
        os.environ.get("HAKI_LOCOMO_DATA", ROOT.parent / "shared" / "data" / "locomo-dev" / "locomo-dev.json")
    )
    chat_questions = []
    if locomo.exists():
        sample = json.loads(locomo.read_text())[0]
        conversation = sample["conversation"]
        turns = [
            f"{t['speaker']}: {t['text']}"
            for key, session in conversation.items()
            if key.startswith("session_") and isinstance(session, list)
            for t in session
        ]
        _store("chat", list(dict.fromkeys(turns)))
        chat_questions = [q["question"] for q in sample["qa"]][:queries]
    _store("worst", [f"Paul lives in {city}{'' if n == 0 else f' {n}'}." for n in range(4) for city in CITIES][:128])
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE facts_fact")
    questions = [q["text"] for s in scopes for q in s["questions"]][:queries]
    now = timezone.now()
    calls = {}
    for subject, asked in (
        ("realistic", questions),
        ("chat", chat_questions),
        ("worst", ["Where does Paul live?"] * 10),
    ):
        if not asked:
            continue
        calls[subject] = []
        for query in asked:
            lookup = retrieval.lookup_for(
                project_id=PROJECT, subject_id=subject, query=query, now=now, cutoffs=volatility_cutoffs(now)
            )
            calls[subject].append(
                retrieval.fact_candidates(lookup, qvec=get_embedder().embed_query(query, project_id=PROJECT))
            )
    for subject in calls:
        _measure(subject, calls[subject][:3], 128)  # warm the caches
        for limit in (64, 128):
            r = _measure(subject, calls[subject], limit)
            print(
                f"{subject} scope ({Fact.objects.filter(project_id=PROJECT, subject_id=subject).count()} facts), "
                f"{r['candidates']:.0f} candidates: find_contradictions p50 {r['p50']:.2f} ms, p95 {r['p95']:.2f} ms "
                f"(its SQL p50 {r['sql_p50']:.2f}, p95 {r['sql_p95']:.2f}); {r['pairs']:.1f} pairs >= "
                f"{thresholds().conflict_min_similarity}, {r['found']:.1f} contradictions per call"
            )
    project_erase(project_id=PROJECT)
