"""What must not change when a database moves (docs/scaling.md, "Moving from one server"): the rows of every table,
and the packet a context call returns on a scope.

    python scripts/check_move.py snapshot --out before.json [--calls 10]    # on the server the data leaves
    python scripts/check_move.py snapshot --out after.json                  # on the one it arrived at
    python scripts/check_move.py compare before.json after.json             # exit 1 on any difference

A snapshot holds, for every table hakimem.distribution names, its rows' count, each project's count and a digest
of its rows (every column's text, in an order of their own), read as the connecting user (the tables' owner or a
superuser: row security does not bind them); then, for each project, the first --calls context calls its traces
recorded (replays left out), asked again through the API (POST /v1/context, in process, with a key of its own,
deleted afterwards) and the packet's facts and episodes kept as ids, in order, with its status, tokens and rendered
text's digest. The rows are read before any call, and the calls run in one transaction rolled back at the end:
a snapshot leaves the database as it found it (no trace, key or access count of its own). Django must be set up.
"""

from __future__ import annotations

import hashlib
import json

from hakimem.distribution import DISTRIBUTED, LOCAL, REFERENCE

# Tables whose rows change by themselves between two snapshots of the same data (a session, a rate counter, a key
# made for the calls): counted, not digested.
UNSTABLE = ("django_session", "hakimem_ratecounter", "hakimem_apikey")


def _table_rows(cursor, table: str) -> dict:
    cursor.execute(f"SELECT count(*) FROM {table}")  # names from hakimem.distribution, never from input
    out = {"rows": cursor.fetchone()[0]}
    if table in DISTRIBUTED:
        cursor.execute(f"SELECT project_id, count(*) FROM {table} GROUP BY project_id ORDER BY project_id")
        out["by_project"] = {project: count for project, count in cursor.fetchall()}
    if table not in UNSTABLE:
        # A digest of the rows' texts, sorted: the same rows give the same digest whatever order a scan returns.
        cursor.execute(f"SELECT md5(t::text) FROM {table} t")
        digests = sorted(row[0] for row in cursor.fetchall())
        out["digest"] = hashlib.sha256("".join(digests).encode()).hexdigest()
    return out


def tables_snapshot() -> dict[str, dict]:
    from django.db import connection

    names = [*DISTRIBUTED, *REFERENCE, *LOCAL]
    with connection.cursor() as cursor:
        cursor.execute("SELECT relname FROM pg_class WHERE relname = ANY(%s) AND relkind IN ('r', 'p')", [names])
        present = {row[0] for row in cursor.fetchall()}
        return {table: _table_rows(cursor, table) for table in names if table in present}


def calls_snapshot(calls_per_project: int) -> list[dict]:
    """The first traced calls of each project asked again, each packet's items as ids in order."""
    from bench.harness_client import client_with_own_key
    from traces.models import Trace

    traced = (
        Trace.objects.filter(replay_of__isnull=True)
        .order_by("project_id", "created_at", "id")
        .values_list("id", "project_id", "subject_id", "query", "budget_tokens")
    )
    chosen: dict[str, list] = {}
    for row in traced:
        if len(chosen.setdefault(row[1], [])) < calls_per_project:
            chosen[row[1]].append(row)
    out = []
    for project_id, rows in chosen.items():
        client, cleanup = client_with_own_key(project_id, label="check_move (deleted when the snapshot ends)")
        try:
            for trace_id, _, subject_id, query, budget in rows:
                payload = {"project_id": project_id, "subject_id": subject_id, "query": query, "budget_tokens": budget}
                response = client.post("/v1/context", payload, format="json")
                if response.status_code != 200:
                    raise RuntimeError(
                        f"POST /v1/context for trace {trace_id}: {response.status_code} {response.content!r}"
                    )
                packet = response.json()
                out.append(
                    {
                        "trace": str(trace_id),
                        "project_id": project_id,
                        "subject_id": subject_id,
                        "status": packet["status"],
                        "used_tokens": packet["used_tokens"],
                        "facts": [item["id"] for item in packet["facts"]],
                        "episodes": [item["id"] for item in packet["episodes"]],
                        "rendered": hashlib.sha256(packet.get("rendered", "").encode()).hexdigest(),
                    }
                )
        finally:
            cleanup()
    return out


def snapshot(*, calls_per_project: int = 10) -> dict:
    from django.db import transaction

    with transaction.atomic():
        tables = tables_snapshot()  # before the calls, which write traces
        calls = calls_snapshot(calls_per_project)
        transaction.set_rollback(True)
    return {"tables": tables, "calls": calls}


def compare(before: dict, after: dict) -> list[str]:
    """Every difference, a line each; none when the move kept the rows and the packets."""
    lines = []
    for table in sorted(set(before["tables"]) | set(after["tables"])):
        b, a = before["tables"].get(table), after["tables"].get(table)
        if b is None or a is None:
            lines.append(f"{table}: only {'after' if b is None else 'before'}")
            continue
        for key in ("rows", "by_project", "digest"):
            if b.get(key) != a.get(key):
                lines.append(f"{table}: {key} {b.get(key)} before, {a.get(key)} after")
    after_calls = {c["trace"]: c for c in after["calls"]}
    for call in before["calls"]:
        other = after_calls.get(call["trace"])
        if other is None:
            lines.append(f"call {call['trace']}: not asked after")
            continue
        for key in ("status", "used_tokens", "facts", "episodes", "rendered"):
            if call[key] != other[key]:
                lines.append(f"call {call['trace']} ({call['project_id']}): {key} differs")
    return lines


def summary(before: dict, after: dict) -> str:
    rows = sum(t["rows"] for t in before["tables"].values())
    differences = compare(before, after)
    head = (
        f"{len(before['tables'])} tables, {rows} rows before; {len(before['calls'])} context calls over "
        f"{len({c['project_id'] for c in before['calls']})} projects: "
    )
    return head + (
        "the same after" if not differences else f"{len(differences)} differences\n" + "\n".join(differences)
    )


def write(path, data: dict) -> None:
    path.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
