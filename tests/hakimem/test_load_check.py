"""The load harness keeps working, and what it checks holds: a short run (hashing embedder, two steps of a
few seconds) against the production server in a subprocess, on the test database, with erasures and curator
resolutions under traffic. Latency is printed, not asserted (timed tests flake); the invariants and the
absence of errors are asserted."""

import pytest
from django.db import connection

from bench import load_check, server


@pytest.mark.django_db(transaction=True)
def test_short_load_run_keeps_every_invariant(tmp_path, capsys):
    report = load_check.run(
        embedder="hashing",
        subjects=6,
        start_rate=6.0,
        max_rate=9.0,
        step_seconds=4.0,
        max_p95=10_000.0,
        erase_every=1.5,
        resolve_every=0.5,
        server_env={"DATABASE_URL": server.database_url(connection.settings_dict), "HAKI_WORKERS": "2"},
        log=tmp_path / "server.log",
    )
    with capsys.disabled():
        load_check.print_report(report)
    assert [s["rate"] for s in report["steps"]] == [6.0, 9.0]
    assert all(s["errors"] == {} and s["done"] == s["due"] for s in report["steps"]), report["steps"]
    assert report["erased_subjects"] >= 2 and report["context_calls"] >= 30
    assert report["invariants"] == {name: [] for name in report["invariants"]}
