"""config/supervise.py: the process that keeps the write worker running beside gunicorn."""

import os
import subprocess
import sys
import time
from pathlib import Path

from bench.server import child_processes

ROOT = Path(__file__).resolve().parents[2]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    return state != "Z"


def _wait_for(predicate, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def test_a_command_that_dies_is_started_again_until_it_succeeds(tmp_path):
    # given a command that fails on its first two runs
    runs = tmp_path / "runs"
    script = f"import pathlib, sys; p = pathlib.Path({str(runs)!r}); p.write_text(p.read_text() + 'x' if p.exists() else 'x'); sys.exit(0 if len(p.read_text()) >= 3 else 3)"
    # when it is supervised, then it is run again until it exits 0 (after 1 s, then 2 s)
    done = subprocess.run(
        [sys.executable, "-m", "config.supervise", sys.executable, "-c", script], cwd=ROOT, timeout=30
    )
    assert done.returncode == 0 and runs.read_text() == "xxx"


def test_the_supervision_ends_with_its_parent(tmp_path):
    # given a supervisor whose parent exits without stopping it (a gunicorn master killed outright)
    pids = tmp_path / "pids"
    parent = (
        "import subprocess, sys, time; "
        "s = subprocess.Popen([sys.executable, '-m', 'config.supervise', 'sleep', '300'], start_new_session=True); "
        f"open({str(pids)!r}, 'w').write(str(s.pid)); "
        # it lives until the supervisor has started its command, as a server does
        "time.sleep(0.2)\n"
        "while not subprocess.run(['ps', '--ppid', str(s.pid)], capture_output=True).stdout.count(b'sleep'): time.sleep(0.1)"
    )
    subprocess.run([sys.executable, "-c", parent], cwd=ROOT, timeout=30, check=True)
    supervisor = int(pids.read_text())
    (child,) = [pid for pid, _ in child_processes(supervisor)]
    try:
        # then it stops its command and exits
        assert _wait_for(lambda: not _alive(child) and not _alive(supervisor), 15)
    finally:
        for pid in (supervisor, child):
            if _alive(pid):
                os.kill(pid, 9)
