"""`make stop` stops what `make run` started: gunicorn (by its pid file), then the embedded PostgreSQL."""

import signal
import subprocess
import sys
import time
from pathlib import Path

from hakimem.dbserver import start_embedded

ROOT = Path(__file__).resolve().parents[2]
# Stands in for gunicorn's master: writes its pid file, and removes it when SIGTERM ends it, as gunicorn does.
FAKE_MASTER = """
import os, signal, sys, time
pidfile = sys.argv[1]
def stop(*_):
    os.unlink(pidfile)
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
open(pidfile, "w").write(str(os.getpid()))
while True:
    time.sleep(0.1)
"""


def _running(pid: int) -> bool:
    """Alive and not a zombie (the postmaster is this process's child here, unreaped once it exits)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


def test_make_stop_stops_the_server_then_the_embedded_database(tmp_path):
    # given an embedded PostgreSQL of its own and a running "gunicorn" with its pid file
    pgdata, pidfile = tmp_path / "pgdata", tmp_path / "gunicorn.pid"
    start_embedded(pgdata)
    postmaster = int((pgdata / "postmaster.pid").read_text().split()[0])
    master = subprocess.Popen([sys.executable, "-c", FAKE_MASTER, str(pidfile)])
    deadline = time.monotonic() + 10
    while not pidfile.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    # when `make stop` runs for them
    try:
        run = subprocess.run(
            ["make", "--no-print-directory", "stop", f"HAKI_PGDATA={pgdata}", f"HAKI_PIDFILE={pidfile}"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=90,
        )
    finally:
        if master.poll() is None:
            master.send_signal(signal.SIGKILL)
    # then both are stopped, in that order, and it says so
    assert run.returncode == 0, run.stderr
    assert master.wait(timeout=10) == 0 and not pidfile.exists()
    assert not _running(postmaster) and not (pgdata / "postmaster.pid").exists()
    assert run.stdout.index("stopped gunicorn") < run.stdout.index("stopped the embedded PostgreSQL")
    # and a second run finds nothing to stop, without failing
    again = subprocess.run(
        ["make", "--no-print-directory", "stop", f"HAKI_PGDATA={pgdata}", f"HAKI_PIDFILE={pidfile}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert again.returncode == 0 and "is not running" in again.stdout
