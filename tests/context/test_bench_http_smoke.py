"""The HTTP benchmark keeps working: a small run (hashing embedder, 3,000 facts, a few calls per phase) against
the production server in a subprocess, on the test database. Figures printed, not asserted (timed tests flake):
what is asserted is that every phase ran and nothing failed."""
import pytest
from django.db import connection

from facts.models import Fact
from bench import over_http


@pytest.mark.django_db(transaction=True)
def test_http_benchmark_smoke_run(tmp_path, capsys):
    report = over_http.run(
        total=3000, embedder="hashing", queries=6, clients=2, duration=1.0, ingest_batches=1, cache_dir=tmp_path,
        workers=2, server_env={"DATABASE_URL": over_http.database_url(connection.settings_dict)},
        log=tmp_path / "server.log", think_ms=5,
    )
    with capsys.disabled():
        over_http.print_report(report)
    assert report["load"]["facts"] == 3000 and report["workers"] == 2
    assert report["ingest"] == {**report["ingest"], "batches": 1, "errors": 0}
    assert Fact.objects.filter(project_id=over_http.INGEST_PROJECT, subject_id=over_http.INGEST_SUBJECT).count() == 100
    assert set(report["scopes"]) == {"small", "ingest"}
    for scope in report["scopes"].values():
        assert scope["one_client"]["calls"] == 6 and scope["one_client"]["errors"] == {}
        assert scope["one_client_paced"]["calls"] == 6 and scope["one_client_paced"]["errors"] == {}
        assert scope["concurrent"]["calls"] >= 1 and scope["concurrent"]["errors"] == {}
        assert scope["in_process_assembler_ms"]["n"] == 6


@pytest.mark.django_db(transaction=True)
def test_ab_benchmark_smoke_run(tmp_path, capsys):
    """scripts/bench_ab.py: a baseline commit's server (HEAD's work tree) and this checkout's, asked the same questions;
    every call answered by both, the work tree removed after."""
    import subprocess

    from bench import ab

    try:  # the script compares commits: it needs this checkout to be a git repository
        trees = ab._git("worktree", "list")
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"not a usable git checkout: {exc}")
    with capsys.disabled():
        report = ab.run(
            baseline="HEAD", total=3000, embedder="hashing", queries=4, think_ms=1, scopes={"small"}, cache_dir=tmp_path,
            server_env={"DATABASE_URL": over_http.database_url(connection.settings_dict), "HAKI_WORKERS": "1"},
            log=tmp_path / "server.log",
        )
    small = report["scopes"]["small"]
    assert small["errors"] == {"baseline": 0, "checkout": 0}
    assert small["baseline"]["n"] == small["checkout"]["n"] == 4
    assert set(small["ratio"]) == {"p50", "p95", "p99"}
    assert report["baseline"] == ab._git("rev-parse", "HEAD")
    assert ab._git("worktree", "list") == trees
