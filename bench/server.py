"""The server under test: gunicorn as `make run` starts it (or Django's development server, as `make dev` does) on a
free loopback port, its environment, and the database URL the benchmarks hand it. Used by scripts/bench_http.py,
scripts/bench_ab.py, scripts/load_check.py and the serving tests."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from bench.clients import request

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def database_url(settings_dict: dict, **params: str) -> str:
    """A postgresql:// URL for a Django DATABASES entry (host may be a socket folder); `params` are added
    to its query (application_name=...)."""
    from urllib.parse import quote, urlencode

    user = quote(settings_dict["USER"] or "")
    password = f":{quote(settings_dict['PASSWORD'])}" if settings_dict["PASSWORD"] else ""
    host = settings_dict["HOST"] or ""
    if host.startswith("/"):
        netloc, query = f"{user}{password}@" if user else "", f"?host={quote(host)}"
    else:
        netloc, query = f"{user}{password}@{host}" + (f":{settings_dict['PORT']}" if settings_dict["PORT"] else ""), ""
    if params:
        query += ("&" if query else "?") + urlencode(params)
    return f"postgresql://{netloc}/{quote(settings_dict['NAME'])}{query}"


def child_processes(pid: int) -> list[tuple[int, str]]:
    """(pid, command line) of each child of `pid`; -ww: the whole line, which ps cuts at 80 columns without a terminal."""
    out = subprocess.run(["ps", "-ww", "-o", "pid=,args=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    rows = (line.split(None, 1) for line in out.splitlines() if line.strip())
    return [(int(row[0]), row[1] if len(row) > 1 else "") for row in rows]


class Server:
    """gunicorn as `make run` starts it (or Django's development server, as `make dev` does), on a free port, from
    the checkout at `root` (scripts/bench_ab.py starts one from another commit's work tree)."""

    def __init__(
        self,
        *,
        kind: str = "gunicorn",
        env: dict | None = None,
        log: Path | None = None,
        port: int | None = None,
        root: Path = ROOT,
    ):
        self.kind, self.port, self.root = kind, port or free_port(), root
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {**os.environ, **(env or {}), "HAKI_PORT": str(self.port)}
        self.log_path = log
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 120.0) -> "Server":
        configuration = "config.gunicorn"
        if not (self.root / "config").is_dir():  # a bench_ab baseline older than the project package config/
            configuration, self.env["DJANGO_SETTINGS_MODULE"] = "hakimem.gunicorn_conf", "hakimem.settings"
        if self.kind == "gunicorn":
            command = [sys.executable, "-m", "gunicorn", "-c", f"python:{configuration}"]
        else:  # the old `make run`: one process, a thread per request, a connection per thread kept 60 s
            self.env.setdefault("HAKI_DB_POOL_MAX", "0")
            command = [sys.executable, "manage.py", "runserver", "--insecure", "--noreload", f"127.0.0.1:{self.port}"]
        out = self.log_path.open("ab") if self.log_path else subprocess.DEVNULL
        self.process = subprocess.Popen(
            command, cwd=self.root, env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.kind} exited with {self.process.returncode} (log: {self.log_path})")
            try:
                status, _ = request(self.url, "GET", "/v1/health/ready", timeout=5)
                if status == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.25)
        self.stop()
        raise RuntimeError(f"{self.kind} not ready after {timeout:.0f} s (log: {self.log_path})")

    def worker_pids(self) -> list[int]:
        if self.kind != "gunicorn":
            return [self.process.pid]
        # gunicorn's children, not the write worker's supervisor it starts beside them (config/gunicorn.py)
        return [pid for pid, args in child_processes(self.process.pid) if "config.supervise" not in args]

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)  # gunicorn: graceful; its workers finish their request
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(5)

    def __enter__(self) -> "Server":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def server_environment(embedder: str, extra: dict | None = None) -> dict:
    """A benchmarked server's environment: this process's database (its data folder unless a DATABASE_URL is set),
    `embedder`, no access log, then `extra`."""
    env = {"HAKI_EMBED_PROVIDER": embedder, "HAKI_ACCESS_LOG": "", **(extra or {})}
    if not os.environ.get("DATABASE_URL") and "DATABASE_URL" not in env:
        env["HAKI_PGDATA"] = os.environ["HAKI_PGDATA"]
    return env
