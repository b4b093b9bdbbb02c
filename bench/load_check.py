"""Load with invariants: the production server under a mixed load, rate after rate, then the database checked.

    python scripts/load_check.py                                   # MiniLM; steps of 30 s from 5 ops/s up
    python scripts/load_check.py --embedder hashing --step-seconds 10

It starts gunicorn as `make run` does (bench/server.py's Server) against its own embedded server
(var/pgdata-load, or HAKI_PGDATA / DATABASE_URL), writes --subjects subjects of project "load" over HTTP, then
runs steps of --step-seconds at rising rates (x1.5 from --start-rate). Each step is open loop: an operation is
due every 1/rate s whatever the answers, and a pool of client threads sends them:
- 80 % POST /v1/context, each with a query text sent once in the whole run (the embedding cache decides nothing);
- 20 % POST /v1/facts, batches of 1-5 facts: new texts, exact repeats of a text written before (they must come
  back `deduplicated` with the first one's id) and negations of one (near-conflicts, which open conflict sets);
- every --erase-every seconds one subject is retired and erased (DELETE /v1/subjects/{s}) while context calls
  for it keep coming (half of all context calls meanwhile): its writes in flight finish first, its reads
  continue during the erasure and stop after.
A step is held when it completed at least 95 % of its due operations, with p95 < --max-p95 ms and no error (any
status other than 200/201, or a transport failure). The run stops at the first step not held and prints the
highest rate held. Then it checks, in the database:
1. no two active facts of a scope share a text, and every exact repeat was answered by a fact holding its
   text (deduplicated);
2. every trace a context call returned exists, and every trace of the project is complete: its served counts
   equal its `included` decisions, and every fact or episode a decision names exists (erased ones aside);
3. every conflict set is consistent: members in the set's scope, at least two, and a resolved set's members
   all marked kept or not (a curator thread resolves open sets every --resolve-every seconds, keeping the
   newest member, while writes may add members to them);
4. nothing of an erased subject is left: no fact, event or conflict set, and no trace of it names a fact or
   an episode or served one.
The clients run in this process, on the same cores as the server. Exit status 1 when an invariant fails.
"""

from __future__ import annotations

import http.client
import itertools
import os
import queue
import random
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

from bench.clients import percentiles, request
from bench.server import Server

ROOT = Path(__file__).resolve().parent.parent

PROJECT = "load"
CONTEXT_SHARE = 0.8
RETIRING_SHARE = 0.5  # of the context calls while a subject is being erased: they race its erasure
HELD_SHARE = 0.95  # of the due operations a step must complete
RATE_FACTOR = 1.5
CLIENT_THREADS = 24
FACTS_PER_SUBJECT = 40
NEGATION = "It is not true that "


class Workload:
    """What the clients send, and what the checks need to know of it afterwards. Thread-safe."""

    def __init__(self, subjects: int, seed: int):
        from bench import dataset

        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        sizes = dict(dataset.subject_sizes(20_000, seed))
        sources = sorted((s for s, n in sizes.items() if s.startswith("s-") and n >= 2 * FACTS_PER_SUBJECT))[:subjects]
        wanted = set(sources)
        pools: dict[str, list[str]] = defaultdict(list)
        for fact in dataset.generate_facts(20_000, seed):
            if fact["subject_id"] in wanted:
                pools[fact["subject_id"]].append(fact["text"])
        self.subjects = {f"u-{i:03d}": source for i, source in enumerate(sources)}
        self.unwritten = {subject: pools[source] for subject, source in self.subjects.items()}
        self.written: dict[str, list[str]] = {subject: [] for subject in self.subjects}
        self.stored: set[tuple[str, str]] = set()  # (subject, text) written and stored as a new fact
        self.repeats: list[tuple[str, str, str]] = []  # (subject, text, id answered) of exact repeats
        self.questions = {
            s: iter(dict.fromkeys(dataset.generate_queries(5_000, seed, subject_id=source)))
            for s, source in self.subjects.items()
        }
        self.sent_questions: set[str] = set()
        self.trace_ids: list[str] = []
        self.live = list(self.subjects)
        self.retiring: set[str] = set()
        self.writes_in_flight: dict[str, int] = defaultdict(int)
        self.erased: list[str] = []
        self.resolved = 0

    def question(self, subject: str) -> str:
        with self.lock:
            for text in self.questions[subject]:
                if text not in self.sent_questions:
                    break
            else:
                text = f"What do we know about {subject} ({len(self.sent_questions)})?"
            self.sent_questions.add(text)
            return text

    def facts_to_write(self, subject: str) -> list[str]:
        with self.lock:
            batch = []
            for _ in range(self.rng.randint(1, 5)):
                roll = self.rng.random()
                if roll < 0.2 and self.written[subject]:
                    batch.append(self.rng.choice(self.written[subject]))
                elif roll < 0.35 and self.written[subject]:
                    batch.append(NEGATION + self.rng.choice(self.written[subject]).rstrip("."))
                elif self.unwritten[subject]:
                    batch.append(self.unwritten[subject].pop(0))
            return list(dict.fromkeys(batch))

    def answered(self, subject: str, texts: list[str], facts: list[dict]) -> None:
        with self.lock:
            for text, fact in zip(texts, facts):
                key = (subject, text)
                if fact["deduplicated"] and key in self.stored:
                    self.repeats.append((subject, text, fact["id"]))
                elif not fact["deduplicated"]:
                    self.stored.add(key)
                    if not text.startswith(NEGATION):
                        self.written[subject].append(text)

    def pick(self) -> tuple[str, str]:
        """(operation, subject): a context call on a live subject, or on the one being erased for half of
        them while there is one; a write on a live one."""
        with self.lock:
            if self.rng.random() < CONTEXT_SHARE:
                if self.retiring and self.rng.random() < RETIRING_SHARE:
                    return "context", self.rng.choice(sorted(self.retiring))
                return "context", self.rng.choice(self.live)
            return "write", self.rng.choice(self.live)


class Step:
    def __init__(self, rate: float):
        self.rate, self.latencies, self.errors, self.due = rate, [], defaultdict(int), 0
        self.lock = threading.Lock()

    def record(self, started: float, status) -> None:
        elapsed = (time.perf_counter() - started) * 1000
        with self.lock:
            if status in (200, 201):
                self.latencies.append(elapsed)
            else:
                self.errors[str(status)] += 1

    def summary(self, seconds: float, max_p95: float) -> dict:
        done = len(self.latencies) + sum(self.errors.values())
        latency = percentiles(self.latencies)
        held = done >= HELD_SHARE * self.due and not self.errors and latency.get("p95", 1e9) < max_p95
        return {
            "rate": round(self.rate, 1),
            "due": self.due,
            "done": done,
            "ops_per_s": round(done / seconds, 1),
            "errors": dict(self.errors),
            "latency_ms": latency,
            "held": held,
            "load_avg_1m": round(os.getloadavg()[0], 2),
        }


def _send(base: str, key: str, work: Workload, operation: str, subject: str, step: Step) -> None:
    started = time.perf_counter()
    try:
        if operation == "context":
            body = {"project_id": PROJECT, "subject_id": subject, "query": work.question(subject), "budget_tokens": 900}
            status, answer = request(base, "POST", "/v1/context", body, key)
            if status == 200:
                with work.lock:
                    work.trace_ids.append((subject, answer["trace_id"]))
        else:
            texts = work.facts_to_write(subject)
            if not texts:
                return
            with work.lock:
                work.writes_in_flight[subject] += 1
            try:
                body = {"facts": [{"project_id": PROJECT, "subject_id": subject, "text": t} for t in texts]}
                status, answer = request(base, "POST", "/v1/facts", body, key, timeout=120)
                if status == 201:
                    work.answered(subject, texts, answer["facts"])
            finally:
                with work.lock:
                    work.writes_in_flight[subject] -= 1
    except (http.client.HTTPException, OSError) as exc:
        status = exc.__class__.__name__
    step.record(started, status)


def _eraser(base: str, key: str, work: Workload, every: float, stop: threading.Event, step_of) -> None:
    """Retire a subject (no new writes), let its writes in flight finish, erase it while reads continue,
    then stop its reads."""
    while not stop.wait(every):
        with work.lock:
            if len(work.live) <= 2:
                return
            subject = work.live.pop(work.rng.randrange(len(work.live)))
            work.retiring.add(subject)
        while work.writes_in_flight[subject] and not stop.is_set():
            time.sleep(0.01)
        started = time.perf_counter()
        try:
            status, _ = request(base, "DELETE", f"/v1/subjects/{subject}?project_id={PROJECT}", key=key, timeout=120)
        except (http.client.HTTPException, OSError) as exc:
            status = exc.__class__.__name__
        step_of().record(started, status)
        with work.lock:
            work.retiring.discard(subject)
            work.erased.append(subject)


def _curator(base: str, key: str, work: Workload, every: float, stop: threading.Event, step_of) -> None:
    """Resolve the oldest open conflict set, keeping its newest member, as a curator would. A set closed or
    erased meanwhile answers 409 or 404: expected under traffic, not an error."""
    while not stop.wait(every):
        started = time.perf_counter()
        try:
            status, page = request(base, "GET", f"/v1/conflicts?project_id={PROJECT}&status=open&limit=1", key=key)
            if status != 200 or not page["conflicts"]:
                step_of().record(started, status)
                continue
            set_id = page["conflicts"][0]["id"]
            status, detail = request(base, "GET", f"/v1/conflicts/{set_id}", key=key)
            if status == 200:
                newest = max(detail["members"], key=lambda m: m["recorded_from"])
                status, _ = request(
                    base,
                    "POST",
                    f"/v1/conflicts/{set_id}/resolve",
                    {"keep": [newest["fact_id"]], "note": "load check"},
                    key,
                )
            if status in (404, 409):
                status = 200
        except (http.client.HTTPException, OSError) as exc:
            status = exc.__class__.__name__
        step_of().record(started, status)
        if status == 200:
            with work.lock:
                work.resolved += 1


def run_step(base: str, key: str, work: Workload, rate: float, seconds: float, max_p95: float) -> dict:
    step = Step(rate)
    due: queue.Queue = queue.Queue()

    def client():
        while (item := due.get()) is not None:
            _send(base, key, work, *item, step)

    threads = [threading.Thread(target=client, daemon=True) for _ in range(CLIENT_THREADS)]
    for thread in threads:
        thread.start()
    began = time.perf_counter()
    for n in itertools.count():
        at = began + n / rate
        if at - began >= seconds:
            break
        time.sleep(max(0.0, at - time.perf_counter()))
        due.put(work.pick())
        step.due += 1
    for _ in threads:
        due.put(None)
    for thread in threads:
        thread.join(timeout=max_p95 / 1000 * 10 + 30)  # operations still due after the window count as not done
    return step.summary(time.perf_counter() - began, max_p95)


def seed_subjects(base: str, key: str, work: Workload) -> None:
    for subject in work.subjects:
        texts = [work.unwritten[subject].pop(0) for _ in range(FACTS_PER_SUBJECT)]
        body = {"facts": [{"project_id": PROJECT, "subject_id": subject, "text": t} for t in texts]}
        status, answer = request(base, "POST", "/v1/facts", body, key, timeout=300)
        if status != 201:
            raise RuntimeError(f"seeding {subject}: {status} {answer}")
        work.answered(subject, texts, answer["facts"])


# --- the invariants -----------------------------------------------------------------------------------


def _rows(sql: str, params: dict) -> list[tuple]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def check_invariants(work: Workload) -> dict[str, list]:
    """Each invariant's violations (empty lists when all hold). Every join names the project: Citus refuses a join by id
    alone."""
    # Traces of an erased subject went with it: only the others' must all be there.
    kept_traces = [trace_id for subject, trace_id in work.trace_ids if subject not in work.erased]
    p = {"p": PROJECT, "erased": work.erased or [""], "traces": kept_traces or ["00000000-0000-0000-0000-000000000000"]}
    problems: dict[str, list] = {}
    problems["duplicate_active_facts"] = _rows(
        "SELECT subject_id, text_hash, count(*) FROM facts_fact WHERE project_id = %(p)s AND status = 'active'"
        " GROUP BY 1, 2 HAVING count(*) > 1",
        p,
    )
    # A repeat is answered by the active fact holding its text then: the first write's, or, once a curator's
    # resolution superseded that one, the fact a later write of the same text created.
    answered = {
        str(i): text
        for i, text in _rows(
            "SELECT id, text FROM facts_fact WHERE project_id = %(p)s AND id = ANY(%(ids)s::uuid[])",
            {**p, "ids": [got for _, _, got in work.repeats] or [None]},
        )
    }
    problems["repeat_answered_by_another_text"] = [
        (s, t, got) for s, t, got in work.repeats if s not in work.erased and answered.get(got) != t
    ]
    stored = {
        str(r[0])
        for r in _rows("SELECT id FROM traces_trace WHERE project_id = %(p)s AND id = ANY(%(traces)s::uuid[])", p)
    }
    problems["returned_trace_missing"] = [(t,) for t in sorted(set(kept_traces) - stored)]
    problems["trace_counts_not_its_decisions"] = _rows(
        """SELECT t.id, t.facts_served, t.episodes_served,
                  count(*) FILTER (WHERE d.decision = 'included' AND d.item_type = 'fact'),
                  count(*) FILTER (WHERE d.decision = 'included' AND d.item_type = 'event')
           FROM traces_trace t LEFT JOIN traces_decision d ON d.trace_id = t.id AND d.project_id = t.project_id
           WHERE t.project_id = %(p)s GROUP BY t.id, t.project_id
           HAVING t.facts_served <> count(*) FILTER (WHERE d.decision = 'included' AND d.item_type = 'fact')
               OR t.episodes_served <> count(*) FILTER (WHERE d.decision = 'included' AND d.item_type = 'event')""",
        p,
    )
    problems["decision_names_missing_item"] = _rows(
        """SELECT t.subject_id, d.id FROM traces_decision d
           JOIN traces_trace t ON t.id = d.trace_id AND t.project_id = d.project_id
           WHERE t.project_id = %(p)s AND NOT t.subject_id = ANY(%(erased)s)
             AND ((d.fact_id IS NOT NULL
                   AND NOT EXISTS (SELECT 1 FROM facts_fact f WHERE f.id = d.fact_id AND f.project_id = d.project_id))
               OR (d.event_id IS NOT NULL
                   AND NOT EXISTS (SELECT 1 FROM facts_event e WHERE e.id = d.event_id AND e.project_id = d.project_id)))""",
        p,
    )
    problems["conflict_member_out_of_scope"] = _rows(
        """SELECT c.id, m.fact_id FROM facts_conflictset c
           JOIN facts_conflictmember m ON m.conflict_set_id = c.id AND m.project_id = c.project_id
           LEFT JOIN facts_fact f ON f.id = m.fact_id AND f.project_id = m.project_id
           WHERE c.project_id = %(p)s AND (f.id IS NULL OR f.subject_id <> c.subject_id)""",
        p,
    )
    problems["conflict_set_under_two_members"] = _rows(
        """SELECT c.id, count(m.id) FROM facts_conflictset c
           LEFT JOIN facts_conflictmember m ON m.conflict_set_id = c.id AND m.project_id = c.project_id
           WHERE c.project_id = %(p)s GROUP BY c.id HAVING count(m.id) < 2""",
        p,
    )
    problems["resolved_set_member_undecided"] = _rows(
        """SELECT c.id, m.fact_id FROM facts_conflictset c
           JOIN facts_conflictmember m ON m.conflict_set_id = c.id AND m.project_id = c.project_id
           WHERE c.project_id = %(p)s AND c.status = 'resolved' AND m.kept IS NULL""",
        p,
    )
    problems["erased_subject_rows_left"] = _rows(
        """SELECT 'fact', subject_id, count(*) FROM facts_fact WHERE project_id = %(p)s AND subject_id = ANY(%(erased)s) GROUP BY 2
           UNION ALL SELECT 'event', subject_id, count(*) FROM facts_event WHERE project_id = %(p)s AND subject_id = ANY(%(erased)s) GROUP BY 2
           UNION ALL SELECT 'conflict set', subject_id, count(*) FROM facts_conflictset WHERE project_id = %(p)s AND subject_id = ANY(%(erased)s) GROUP BY 2
           UNION ALL SELECT 'trace naming an item', t.subject_id, count(*) FROM traces_trace t
             WHERE t.project_id = %(p)s AND t.subject_id = ANY(%(erased)s)
               AND (t.facts_served > 0 OR t.episodes_served > 0 OR EXISTS (SELECT 1 FROM traces_decision d
                    WHERE d.trace_id = t.id AND d.project_id = t.project_id AND (d.fact_id IS NOT NULL OR d.event_id IS NOT NULL))) GROUP BY 2""",
        p,
    )
    return problems


# --- the run ------------------------------------------------------------------------------------------


def run(
    *,
    embedder: str,
    subjects: int,
    start_rate: float,
    max_rate: float,
    step_seconds: float,
    max_p95: float,
    erase_every: float,
    resolve_every: float = 3.0,
    seed: int = 7,
    server_env: dict | None = None,
    log: Path | None = None,
) -> dict:
    from django.conf import settings

    from privacy.services import project_erase
    from hakimem.services import api_key_create

    settings.HAKI_EMBED_PROVIDER = embedder
    project_erase(project_id=PROJECT)
    _, key = api_key_create(project_id=PROJECT, label="load_check")
    env = {"HAKI_EMBED_PROVIDER": embedder, "HAKI_ACCESS_LOG": "", **(server_env or {})}
    if not os.environ.get("DATABASE_URL") and "DATABASE_URL" not in env:
        env["HAKI_PGDATA"] = os.environ["HAKI_PGDATA"]
    work = Workload(subjects, seed)
    report = {"embedder": embedder, "subjects": subjects, "cores": os.cpu_count(), "max_p95_ms": max_p95, "steps": []}
    with Server(env=env, log=log) as server:
        report["workers"] = len(server.worker_pids())
        seed_subjects(server.url, key, work)
        # The eraser and the curator record into the step running when their call ends.
        background: list[tuple[Step, Step]] = [(Step(start_rate), Step(start_rate))]
        stop = threading.Event()
        threads = [
            threading.Thread(
                target=_eraser, args=(server.url, key, work, erase_every, stop, lambda: background[-1][0]), daemon=True
            ),
            threading.Thread(
                target=_curator,
                args=(server.url, key, work, resolve_every, stop, lambda: background[-1][1]),
                daemon=True,
            ),
        ]
        for thread in threads:
            thread.start()
        rate = start_rate
        while rate <= max_rate:
            summary = run_step(server.url, key, work, rate, step_seconds, max_p95)
            erasures, curation = background[-1]
            background.append((Step(rate), Step(rate)))
            summary["erasures"] = {"done": len(erasures.latencies), "errors": dict(erasures.errors)}
            summary["resolutions"] = {"done": len(curation.latencies), "errors": dict(curation.errors)}
            summary["errors"].update({f"erase {k}": v for k, v in erasures.errors.items()})
            summary["errors"].update({f"resolve {k}": v for k, v in curation.errors.items()})
            summary["held"] = summary["held"] and not erasures.errors and not curation.errors
            report["steps"].append(summary)
            print(
                f"{summary['rate']:>6}/s due {summary['due']:>5} done {summary['done']:>5} ({summary['ops_per_s']}/s) "
                f"p50 {summary['latency_ms'].get('p50')} p95 {summary['latency_ms'].get('p95')} ms errors "
                f"{summary['errors'] or 0} erasures {summary['erasures']['done']} -> "
                f"{'held' if summary['held'] else 'NOT held'}",
                file=sys.stderr,
                flush=True,
            )
            if not summary["held"]:
                break
            rate *= RATE_FACTOR
        stop.set()
        for thread in threads:
            thread.join(timeout=180)
    held = [s["rate"] for s in report["steps"] if s["held"]]
    report["highest_rate_held"] = max(held) if held else None
    report["erased_subjects"] = len(work.erased)
    report["context_calls"] = len(work.trace_ids)
    report["exact_repeats"] = len(work.repeats)
    report["conflicts_resolved"] = work.resolved
    report["invariants"] = {
        name: [list(map(str, row)) for row in rows] for name, rows in check_invariants(work).items()
    }
    return report


def print_report(report: dict) -> None:
    print(
        f"\nload check: gunicorn ({report['workers']} workers) on {report['cores']} cores, embedder "
        f"{report['embedder']}, {report['subjects']} subjects, 80 % context calls / 20 % writes, a step is held "
        f"with p95 < {report['max_p95_ms']} ms and no error"
    )
    for s in report["steps"]:
        print(
            f"  {s['rate']:>6} ops/s: {s['done']}/{s['due']} done, p50 {s['latency_ms'].get('p50')} p95 "
            f"{s['latency_ms'].get('p95')} p99 {s['latency_ms'].get('p99')} ms, errors {s['errors'] or 0}, "
            f"erasures {s['erasures']['done']}, resolutions {s['resolutions']['done']}, load {s['load_avg_1m']}: {'held' if s['held'] else 'not held'}"
        )
    print(
        f"highest rate held: {report['highest_rate_held']} ops/s; {report['context_calls']} context calls, "
        f"{report['exact_repeats']} exact repeats, {report['conflicts_resolved']} conflict sets resolved, "
        f"{report['erased_subjects']} subjects erased under traffic"
    )
    for name, rows in report["invariants"].items():
        print(f"  {'ok  ' if not rows else 'FAIL'} {name}" + (f": {len(rows)} e.g. {rows[:3]}" if rows else ""))
