"""The production server of `make run` (gunicorn with config/gunicorn.py) serves the app: started in a
subprocess on a free loopback port, against the test database, with the hashing embedder."""

import http.client
import json
import os
import re
import signal
import threading
import time
from pathlib import Path
from urllib.parse import urlencode

import psycopg
import pytest
from prometheus_client.parser import text_string_to_metric_families
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connection
from django.test import Client

from hakimem.dbserver import APP_LOGIN_ROLE
from hakimem.services import api_key_create
from bench.clients import request
from bench.server import Server, child_processes, database_url
from tests.conftest import PROJECT

WORKERS, THREADS = 2, 2
APP_NAME = "hakimem-served-test"


METRICS_TOKEN = "metrics-token-of-the-test"


@pytest.fixture
def served(transactional_db, tmp_path, settings):
    """gunicorn on the test database, its workers logged in as the application's role (migrations and this test
    as the owner); its connections carry APP_NAME, and idle ones beyond the pool's minimum are closed after a
    second."""
    settings.STATIC_ROOT = tmp_path / "static"
    call_command("collectstatic", "--noinput", verbosity=0)  # what `make run` does before starting gunicorn
    env = {
        "DATABASE_URL": database_url(connection.settings_dict, application_name=APP_NAME),
        "HAKI_APP_DATABASE_URL": database_url(
            {**connection.settings_dict, "USER": APP_LOGIN_ROLE, "PASSWORD": ""}, application_name=APP_NAME
        ),
        "HAKI_EMBED_PROVIDER": "hashing",
        "HAKI_WORKERS": str(WORKERS),
        "HAKI_THREADS": str(THREADS),
        "HAKI_DB_POOL_MAX_IDLE": "1",
        "HAKI_ACCESS_LOG": "",
        "HAKI_STATIC_ROOT": str(settings.STATIC_ROOT),
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics"),
        "HAKI_METRICS_TOKEN": METRICS_TOKEN,
        "HAKI_WRITE_JOB_CHARS": "2000",  # a batch of three 1,000-character facts is heavy
    }
    with Server(env=env, log=tmp_path / "server.log") as server:
        yield server


def _server_connections() -> list[str]:
    """The states of the server's connections to the database, seen from outside it."""
    with psycopg.connect(database_url(connection.settings_dict), autocommit=True) as conn:
        rows = conn.execute("SELECT state FROM pg_stat_activity WHERE application_name = %s", [APP_NAME]).fetchall()
    return [state for (state,) in rows]


def test_a_heavy_batch_is_written_by_the_worker_the_server_started(served):
    # given a key and a batch over HAKI_WRITE_JOB_CHARS
    _, key = api_key_create(project_id=PROJECT, label="served")
    texts = [f"Dana wrote chapter {n} of her novel. " + "She keeps notes in a red notebook. " * 28 for n in range(3)]
    facts = [{"project_id": PROJECT, "subject_id": "dana", "text": t} for t in texts]
    # when it is posted, then it is accepted as a job
    status, answer = request(served.url, "POST", "/v1/facts", {"facts": facts}, key)
    assert status == 202, answer
    # and the write worker beside gunicorn writes it (bounded wait)
    deadline = time.monotonic() + 90
    while (job := request(served.url, "GET", f"/v1/jobs/{answer['job']['id']}", key=key)[1])["status"] == "pending":
        assert time.monotonic() < deadline, job
        time.sleep(0.5)
    assert job["status"] == "done", job
    status, page = request(served.url, "GET", f"/v1/facts?project_id={PROJECT}&subject_id=dana", key=key)
    assert {f["id"] for f in page["facts"]} == {f["id"] for f in job["facts"]} and len(job["facts"]) == 3
    # when the write worker is killed, then it is started again, and writes the next heavy batch
    killed = _write_worker_pid(served)
    os.kill(killed, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while _write_worker_pid(served) in (None, killed):
        assert time.monotonic() < deadline, "the write worker was not started again"
        time.sleep(0.2)
    facts = [{**f, "text": f["text"].replace("novel", "play")} for f in facts]
    status, answer = request(served.url, "POST", "/v1/facts", {"facts": facts}, key)
    assert status == 202, answer
    deadline = time.monotonic() + 90
    while (job := request(served.url, "GET", f"/v1/jobs/{answer['job']['id']}", key=key)[1])["status"] == "pending":
        assert time.monotonic() < deadline, job
        time.sleep(0.5)
    assert job["status"] == "done" and len(job["facts"]) == 3, job


def _write_worker_pid(served) -> int | None:
    """The write worker's pid: the child of its supervisor (config/supervise.py), gunicorn's child."""
    supervisors = [pid for pid, args in child_processes(served.process.pid) if "config.supervise" in args]
    workers = [pid for supervisor in supervisors for pid, _ in child_processes(supervisor)]
    return workers[0] if workers else None


def test_the_production_server_serves_the_api_and_the_pages(served):
    # given a key and a staff user's session
    _, key = api_key_create(project_id=PROJECT, label="served")
    staff = User.objects.create_user("sam", password="pw-sam", is_staff=True, is_superuser=True)
    browser = Client()
    browser.force_login(staff)
    session = browser.cookies["sessionid"].value

    # then the probes answer
    assert request(served.url, "GET", "/v1/health")[0] == 200
    assert request(served.url, "GET", "/v1/health/live") == (200, {"status": "ok"})
    assert request(served.url, "GET", "/v1/health/ready")[1]["status"] == "ready"
    # and a fact written over HTTP is served by a context call
    status, _ = request(
        served.url,
        "POST",
        "/v1/facts",
        {"project_id": PROJECT, "subject_id": "alice", "text": "Alice is allergic to peanuts."},
        key,
    )
    assert status == 201
    status, packet = request(
        served.url,
        "POST",
        "/v1/context",
        {"project_id": PROJECT, "subject_id": "alice", "query": "What is Alice allergic to?"},
        key,
    )
    assert status == 200 and [f["text"] for f in packet["facts"]] == ["Alice is allergic to peanuts."]
    assert request(served.url, "POST", "/v1/context", {"project_id": PROJECT}, key)[0] == 400
    # and /metrics adds up what the workers saw, whichever worker answers
    conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
    conn.request("GET", "/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
    metrics = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(conn.getresponse().read().decode())
        for s in family.samples
    }
    assert metrics[("hakimem_context_phase_seconds_count", (("phase", "embed"),))] == 1
    assert (
        metrics[
            (
                "hakimem_http_request_duration_seconds_count",
                (("endpoint", "v1/context"), ("method", "POST"), ("status", "400")),
            )
        ]
        == 1
    )
    assert metrics[("hakimem_db_pool_max", ())] == WORKERS * THREADS

    # and the admin's pages come with their CSS (whitenoise), the stats pages render for a staff user
    conn.request("GET", "/admin/login/")
    login = conn.getresponse()
    assert login.status == 200 and "/static/admin/css/base.css" in login.read().decode()
    conn.request("GET", "/static/admin/css/base.css", headers={"Accept-Encoding": "gzip"})
    css = conn.getresponse()
    assert css.status == 200 and css.getheader("Content-Type").startswith("text/css")
    assert css.getheader("Content-Encoding") == "gzip"
    css.read()
    conn.request("GET", f"/stats/?project={PROJECT}", headers={"Cookie": f"sessionid={session}"})
    page = conn.getresponse()
    assert page.status == 200 and "<style>" in page.read().decode()
    # and a charset that is no text encoding on a GET with a query string is a 415 in the contract (it was
    # gunicorn's own HTML 500: Django failed while building the request)
    conn.request(
        "GET",
        f"/v1/facts?project_id={PROJECT}&subject_id=alice",
        headers={"Content-Type": "application/json; charset=rot13", "Authorization": f"Bearer {key}"},
    )
    refused = conn.getresponse()
    assert refused.status == 415 and json.loads(refused.read())["error"]["code"] == "unsupported_media_type"
    # and a person signs in to the admin (the session written and the account read as the admin's role)
    cookie, token = csrf_of_login_page(conn)
    conn.request(
        "POST",
        "/admin/login/?next=/admin/",
        body=urlencode({"csrfmiddlewaretoken": token, "username": "sam", "password": "pw-sam", "next": "/admin/"}),
        headers={"Content-Type": "application/x-www-form-urlencoded", "Cookie": f"csrftoken={cookie}"},
    )
    signed_in = conn.getresponse()
    signed_in.read()
    assert signed_in.status == 302 and "sessionid=" in (signed_in.getheader("Set-Cookie") or "")
    conn.close()
    # and every connection the workers opened logged in as the application's role
    with psycopg.connect(database_url(connection.settings_dict), autocommit=True) as owner:
        users = owner.execute(
            "SELECT DISTINCT usename FROM pg_stat_activity WHERE application_name = %s", [APP_NAME]
        ).fetchall()
    assert users == [(APP_LOGIN_ROLE,)]


def csrf_of_login_page(conn) -> tuple[str, str]:
    """The CSRF cookie and form token of the admin's sign-in page, asked on `conn`."""
    conn.request("GET", "/admin/login/")
    response = conn.getresponse()
    cookie = re.search(r"csrftoken=([^;]+)", response.getheader("Set-Cookie") or "").group(1)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', response.read().decode()).group(1)
    return cookie, token


def test_the_pool_bounds_the_connections_under_load_and_gives_idle_ones_back(served):
    # given more concurrent clients than the server has threads
    _, key = api_key_create(project_id=PROJECT, label="served")
    for i in range(20):
        request(
            served.url,
            "POST",
            "/v1/facts",
            {"project_id": PROJECT, "subject_id": "bob", "text": f"Bob visited city number {i} in spring."},
            key,
        )
    clients, calls_each = 12, 4
    statuses, seen, done = [], [], threading.Event()

    def watch():
        while not done.is_set():
            seen.append(len(_server_connections()))
            time.sleep(0.005)

    def client(n):
        for i in range(calls_each):
            statuses.append(
                request(
                    served.url,
                    "POST",
                    "/v1/context",
                    {"project_id": PROJECT, "subject_id": "bob", "query": f"Where did Bob go? {n}-{i}"},
                    key,
                )[0]
            )

    watcher = threading.Thread(target=watch)
    watcher.start()
    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    done.set()
    watcher.join()

    # then every call was answered, and the server never held more than workers x threads connections
    assert statuses == [200] * clients * calls_each
    assert max(seen) <= WORKERS * THREADS, seen
    # and once the load is gone, the connections are back in the pools, idle, shrinking to one per worker
    deadline = time.monotonic() + 20
    while len(states := _server_connections()) > WORKERS and time.monotonic() < deadline:
        time.sleep(0.5)
    assert len(states) <= WORKERS and set(states) <= {"idle"}, states


def _post_raw(port: int, path: str, body: dict, key: str) -> tuple[int, str, bytes]:
    """(status, Content-Type, body) of one request on a connection of its own."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request(
            "POST",
            path,
            body=json.dumps(body),
            headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        )
        response = conn.getresponse()
        return response.status, response.getheader("Content-Type") or "", response.read()
    finally:
        conn.close()


def _signal_taken(log, workers: list[int]) -> bool:
    """The master logged the signal, and no worker has one pending (their handlers have run)."""
    if "Handling signal: int" not in log.read_text():
        return False
    for pid in workers:
        try:
            lines = Path(f"/proc/{pid}/status").read_text().splitlines()
            status = dict(line.split(":\t", 1) for line in lines if ":\t" in line)
        except FileNotFoundError:  # already gone
            continue
        if int(status["SigPnd"], 16) or int(status["ShdPnd"], 16):
            return False
    return True


@pytest.mark.django_db(transaction=True)
def test_ctrl_c_lets_the_requests_in_flight_finish_then_stops(tmp_path):
    # given the production server, and a fact write of it waiting for its scope's lock, which the test holds
    _, key = api_key_create(project_id=PROJECT, label="served")
    env = {
        "DATABASE_URL": database_url(connection.settings_dict, application_name=APP_NAME),
        "HAKI_EMBED_PROVIDER": "hashing",
        "HAKI_WORKERS": "1",
        "HAKI_THREADS": "1",
        "HAKI_ACCESS_LOG": "",
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics"),
    }
    with (
        Server(env=env, log=tmp_path / "server.log") as server,
        psycopg.connect(database_url(connection.settings_dict)) as holder,
    ):
        holder.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s || chr(31) || %s, 0))", [PROJECT, "alice"])
        answers = []
        writing = threading.Thread(
            target=lambda: answers.append(
                _post_raw(
                    server.port,
                    "/v1/facts",
                    {"project_id": PROJECT, "subject_id": "alice", "text": "Alice sails."},
                    key,
                )
            )
        )
        writing.start()
        deadline = time.monotonic() + 30
        # this database's sessions only: another xdist worker's test database lives on the same server
        while (
            not holder.execute(
                "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE"
                " l.locktype = 'advisory' AND NOT l.granted AND a.datname = current_database()"
            ).fetchone()[0]
            and time.monotonic() < deadline
        ):
            time.sleep(0.02)

        # when Ctrl-C reaches the server's processes (the terminal's whole process group), and both have taken it,
        # then the write goes on
        workers = server.worker_pids()
        os.killpg(server.process.pid, signal.SIGINT)
        deadline = time.monotonic() + 30
        while not (_signal_taken(tmp_path / "server.log", workers) or time.monotonic() > deadline):
            time.sleep(0.02)
        holder.commit()
        writing.join(timeout=60)

        # then the request in flight was answered in full, and the server exited on its own
        status, content_type, body = answers[0]
        assert (status, content_type) == (201, "application/json"), (status, body[:200])
        assert json.loads(body)["text"] == "Alice sails."
        assert server.process.wait(timeout=30) == 0
