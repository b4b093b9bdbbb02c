"""python -m config.supervise COMMAND [ARG...]: run COMMAND, and start it again whenever it dies.

gunicorn's master restarts its own workers, not the task queue's worker it starts beside them (config/gunicorn.py):
killed (out of memory, SIGKILL), that worker would leave heavy fact batches pending until the server restarts. This
process stays between them: it starts COMMAND again when it is killed by a signal or exits with an error, after
RESTART_WAIT[0] seconds, doubling up to RESTART_WAIT[1] while it keeps dying within STEADY_SECONDS. SIGTERM and SIGINT
are passed on to COMMAND, and the supervision ends with it; so it does when its own parent is gone (a gunicorn
master killed outright), COMMAND stopped with SIGTERM first. No Django here: a few MB of memory.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

RESTART_WAIT = (1.0, 30.0)  # seconds before a restart: the first, and the most it doubles to
STEADY_SECONDS = 60.0  # a run this long was not a crash loop: the next restart waits RESTART_WAIT[0] again
PARENT_CHECK_SECONDS = 1.0


def supervise(command: list[str]) -> int:
    """Run `command` until it exits on its own (code 0) or is told to stop; returns its last exit code."""
    stopping = False
    child: subprocess.Popen | None = None

    def stop(signum, frame) -> None:
        nonlocal stopping
        stopping = True
        if child is not None and child.poll() is None:
            child.send_signal(signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    parent = os.getppid()
    next_wait = RESTART_WAIT[0]
    while True:
        started = time.monotonic()
        child = subprocess.Popen(command)
        code = None
        while code is None:
            try:
                code = child.wait(PARENT_CHECK_SECONDS)
            except subprocess.TimeoutExpired:
                if os.getppid() != parent and not stopping:  # orphaned: nobody will stop it
                    stop(signal.SIGTERM, None)
        if stopping or code == 0:
            return code
        ran = time.monotonic() - started
        wait = RESTART_WAIT[0] if ran >= STEADY_SECONDS else next_wait
        next_wait = min(2 * wait, RESTART_WAIT[1])
        how = f"killed by signal {-code}" if code < 0 else f"exited with code {code}"
        print(f"supervise: {command[-1]} {how} after {ran:.0f} s; started again in {wait:.0f} s", file=sys.stderr)
        deadline = time.monotonic() + wait
        while not stopping and time.monotonic() < deadline and os.getppid() == parent:
            time.sleep(0.1)
        if stopping or os.getppid() != parent:
            return code


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.exit(supervise(sys.argv[1:]))
