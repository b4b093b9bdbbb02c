"""The HTTP benchmark keeps working: a small run (hashing embedder, 3,000 facts, a few calls per phase) against
the production server in a subprocess, on the test database. Figures printed, not asserted (timed tests flake):
what is asserted is that every phase ran and nothing failed."""

import pytest
from django.db import connection

from facts.models import Fact, IdentityBlock, Procedure
from bench import over_http
from bench.floor import fig, floor_measure, floor_of_run, floor_questions, floor_targets, to_floor
from bench.server import Server, database_url, server_environment


@pytest.mark.django_db(transaction=True)
def test_http_benchmark_smoke_run(tmp_path, capsys):
    report = over_http.run(
        total=3000,
        embedder="hashing",
        queries=6,
        clients=2,
        duration=1.0,
        ingest_batches=1,
        cache_dir=tmp_path,
        workers=2,
        server_env={"DATABASE_URL": database_url(connection.settings_dict)},
        log=tmp_path / "server.log",
        think_ms=5,
    )
    with capsys.disabled():
        over_http.print_report(report)
    assert report["load"]["facts"] == 3000 and report["workers"] == 2
    assert report["ingest"] == {**report["ingest"], "batches": 1, "errors": 0}
    assert Fact.objects.filter(project_id=over_http.INGEST_PROJECT, subject_id=over_http.INGEST_SUBJECT).count() == 100
    assert set(report["scopes"]) == {"small", "ingest"}
    floor = report["floor"]
    assert floor["floor_ms"] == floor["before"]["floor_ms"] and floor["after"]["floor_ms"] > 0
    for scope in report["scopes"].values():
        assert scope["one_client"]["calls"] == 6 and scope["one_client"]["errors"] == {}
        assert scope["one_client_paced"]["calls"] == 6 and scope["one_client_paced"]["errors"] == {}
        assert scope["concurrent"]["calls"] >= 1 and scope["concurrent"]["errors"] == {}
        assert scope["in_process_assembler_ms"]["n"] == 6
        one = scope["one_client"]
        assert one["x_floor"]["p50"] == round(one["latency_ms"]["p50"] / floor["floor_ms"], 2)
    small = report["scopes"]["small"]["one_client"]
    assert [(row["target"], row["scope"], row["ratio"]) for row in report["targets"]] == [
        ("50-fact scope, 1 client, p50", "small", round(small["latency_ms"]["p50"] / floor["floor_ms"], 2)),
        ("50-fact scope, 1 client, p95", "small", round(small["latency_ms"]["p95"] / floor["floor_ms"], 2)),
    ]


@pytest.mark.django_db(transaction=True)
def test_floor_measured_against_a_live_server(tmp_path):
    """Issue 31's floor: embedding one question in this process + the liveness probe's round trip through the server,
    each p50 over distinct questions; every ratio the reports print is computed from it. Shape only, no timing."""
    from django.test import override_settings

    with (
        override_settings(HAKI_EMBED_PROVIDER="hashing"),
        Server(
            env=server_environment(
                "hashing", {"DATABASE_URL": database_url(connection.settings_dict), "HAKI_WORKERS": "1"}
            ),
            log=tmp_path / "server.log",
        ) as server,
    ):
        sent = {"What did Ana say about Lyon?"}
        questions = floor_questions(12, 7, sent)
        floor = floor_measure([server.url], questions)
        later = floor_measure([server.url], floor_questions(12, 8, sent | set(questions)))

    assert len(set(questions)) == 12 and not sent & set(questions)
    for part in ("embed_ms", "live_ms"):
        assert floor[part]["n"] == 12
        assert 0 < floor[part]["p50"] <= floor[part]["p95"]
    assert floor["floor_ms"] == round(floor["embed_ms"]["p50"] + floor["live_ms"]["p50"], 2) > 0
    run = floor_of_run(floor, later)
    assert run["floor_ms"] == floor["floor_ms"] and run["after"] is later  # the lines printed during the run used it

    call = {"p50": 3 * run["floor_ms"], "p95": 4 * run["floor_ms"]}
    assert to_floor(call, run["floor_ms"]) == {"p50": 3.0, "p95": 4.0}
    assert fig(call, "p50", run["floor_ms"]).endswith("(3.00x floor)")
    rows = floor_targets(
        {"small": (50, call), "big": (5200, {"p50": 1.5 * run["floor_ms"]})}, run["floor_ms"], total=9000
    )
    assert [(row["target"], row["ratio"], row["met"]) for row in rows] == [
        ("50-fact scope, 1 client, p50", 3.0, False),
        ("50-fact scope, 1 client, p95", 4.0, False),
        ("5k+ scope, 1 client, p50", 1.5, True),
    ]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("tiers", [False, True], ids=["plain", "tiered"])
def test_ab_benchmark_smoke_run(tmp_path, capsys, tiers):
    """scripts/bench_ab.py: a baseline commit's server (HEAD's work tree) and this checkout's, asked the same questions
    (plain or tiered calls); every call answered by both, the work tree removed after."""
    import subprocess

    from bench import ab

    try:  # the script compares commits: it needs this checkout to be a git repository
        trees = ab._git("worktree", "list", "--porcelain")
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"not a usable git checkout: {exc}")
    with capsys.disabled():
        report = ab.run(
            baseline="HEAD",
            total=3000,
            embedder="hashing",
            queries=4,
            think_ms=1,
            scopes={"small"},
            cache_dir=tmp_path,
            server_env={"DATABASE_URL": database_url(connection.settings_dict), "HAKI_WORKERS": "1"},
            log=tmp_path / "server.log",
            tiers=tiers,
        )
    assert report["asks"] == ({"tiers": True} if tiers else {})
    from bench import dataset

    seeded = (
        IdentityBlock.objects.filter(project_id=dataset.PROJECT).count(),
        Procedure.objects.filter(project_id=dataset.PROJECT).count(),
    )
    assert seeded == ((2, over_http.BENCH_PROCEDURES) if tiers else (0, 0))
    small = report["scopes"]["small"]
    assert small["errors"] == {"baseline": 0, "checkout": 0}
    assert small["baseline"]["n"] == small["checkout"]["n"] == 4
    assert set(small["ratio"]) == {"p50", "p95", "p99"}
    floor = report["floor"]
    assert floor["floor_ms"] == floor["before"]["floor_ms"] > 0 and floor["after"]["floor_ms"] > 0
    assert small["x_floor"]["checkout"]["p50"] == round(small["checkout"]["p50"] / floor["floor_ms"], 2)
    assert [row["scope"] for row in report["targets"].get("baseline", [])] == ([] if tiers else ["small", "small"])
    assert report["baseline"] == ab._git("rev-parse", "HEAD")
    # the same work trees (their paths: another tree's commit may move meanwhile)
    assert _tree_paths(ab._git("worktree", "list", "--porcelain")) == _tree_paths(trees)


def _tree_paths(porcelain: str) -> set[str]:
    return {line.split(" ", 1)[1] for line in porcelain.splitlines() if line.startswith("worktree ")}


def test_ab_baseline_is_a_commit_or_a_database(tmp_path):
    """bench_ab takes a baseline commit or a baseline database, one of the two; a database is a URL or an embedded
    server's folder, and a folder clears the URL this process may hold (which would otherwise win)."""
    from bench import ab

    assert ab.database_environment("postgresql://u:pw@h:5/d") == {"DATABASE_URL": "postgresql://u:pw@h:5/d"}
    assert ab.database_environment(str(tmp_path / "pg")) == {"DATABASE_URL": "", "HAKI_PGDATA": str(tmp_path / "pg")}
    assert ab.database_label("postgresql://u:pw@h:5/d?sslmode=require") == "postgresql://u@h:5/d?sslmode=require"
    with pytest.raises(ValueError):
        ab.run(
            baseline="HEAD",
            baseline_database="postgresql://u@h:5/d",
            total=1,
            embedder="hashing",
            queries=1,
            think_ms=0,
        )


@pytest.mark.django_db(transaction=True)
def test_ab_benchmark_against_another_database(tmp_path, capsys):
    """scripts/bench_ab.py --baseline-database: this checkout's server on a second database beside the one on the test
    database, the dataset loaded and settled in each (the second by the --prepare child); each server's calls are
    traced in its own database, and both answer every question with the same packet (the same rows, same seed)."""
    import psycopg

    from bench import ab, dataset
    from traces.models import Trace

    here_url = database_url(connection.settings_dict)
    other = f"{connection.settings_dict['NAME']}_ab_baseline"
    other_url = database_url({**connection.settings_dict, "NAME": other})
    with psycopg.connect(here_url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{other}"')
        admin.execute(f'CREATE DATABASE "{other}"')
    try:
        with capsys.disabled():
            report = ab.run(
                baseline_database=other_url,
                total=3000,
                embedder="hashing",
                queries=4,
                think_ms=1,
                scopes={"small"},
                cache_dir=tmp_path,
                server_env={"DATABASE_URL": here_url, "HAKI_WORKERS": "1"},
                log=tmp_path / "server.log",
            )
        small = report["scopes"]["small"]
        assert small["errors"] == {"baseline": 0, "checkout": 0}
        assert small["baseline"]["n"] == small["checkout"]["n"] == 4
        assert small["same_packets"] == 4
        calls = over_http.WARM_UP_CALLS_PER_WORKER * 3 + 4
        here = Trace.objects.filter(project_id=dataset.PROJECT, subject_id=small["subject"]).count()
        with psycopg.connect(other_url) as conn:
            there = conn.execute(
                "SELECT count(*) FROM traces_trace WHERE project_id = %s AND subject_id = %s",
                [dataset.PROJECT, small["subject"]],
            ).fetchone()[0]
        assert (here, there) == (calls, calls)
        assert report["databases"] == {
            "baseline": ab.database_label(other_url),
            "checkout": ab.database_label(here_url),
        }
        assert report["checkout"].startswith(report["baseline"])  # one checkout serves both
    finally:
        with psycopg.connect(here_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{other}" WITH (FORCE)')
