"""Production settings (issue 35, item 8): the variables that turn on HTTPS' protections pass `check --deploy`, every
page carries a Content-Security-Policy it works under, passwords are validated, `make run` prints no secret, and the
logs keep crashes' tracebacks but no subject id."""

import io
import logging
import os
import re
import secrets
import stat
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.contrib.auth.models import User
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.urls import path
from django.utils import timezone
from gunicorn.config import Config

from bench.server import database_url
from config.logs import AccessLogger, redacted_url
from config.urls import handler400, handler403, handler404, handler500, urlpatterns as root_urlpatterns  # noqa: F401
from hakimem.models import ApiKey, hash_key
from tests.conftest import PROJECT
from tests.facts.factories import FactFactory
from tests.traces.factories import record_call

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


def production_settings() -> dict:
    """The settings file a deployment starts from (deploy/hakimem.env.example, docs/deploy.md), its secret key
    filled in; the database comes from the test server."""
    lines = (ROOT / "deploy" / "hakimem.env.example").read_text().splitlines()
    env = dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))
    assert env.pop("DJANGO_SECRET_KEY") == "CHANGE-ME"
    return {key: value for key, value in env.items() if "DATABASE_URL" not in key} | {
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50)
    }


def check_deploy(extra: dict) -> str:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("HAKI_", "DJANGO_"))}
    env |= {"DATABASE_URL": database_url(connection.settings_dict), "HAKI_EMBED_PROVIDER": "hashing", **extra}
    done = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.stdout + done.stderr


def test_check_deploy_gives_no_warning_with_the_production_variables():
    # given the deployment's settings file, then Django's deployment checklist finds nothing
    production = production_settings()
    assert production["HAKI_SSL_REDIRECT"] == "on"
    output = check_deploy(production)
    assert "System check identified no issues" in output, output
    # and without them it names what they turn on
    output = check_deploy({"DJANGO_SECRET_KEY": production["DJANGO_SECRET_KEY"]})
    assert {"security.W004", "security.W008", "security.W012", "security.W016"} <= set(
        re.findall(r"security\.W\d+", output)
    )


def test_https_redirect_spares_the_probes_and_hsts_and_secure_cookies_follow(settings):
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_HSTS_SECONDS = 31536000
    settings.SESSION_COOKIE_SECURE = settings.CSRF_COOKIE_SECURE = True
    client = Client()
    # a page asked in plain HTTP is sent to HTTPS, the liveness probe is answered where it asked
    response = client.get("/admin/login/")
    assert response.status_code == 301 and response["Location"] == "https://testserver/admin/login/"
    assert client.get("/v1/health/live").status_code == 200
    # over HTTPS: HSTS, and the CSRF cookie only for HTTPS
    response = client.get("/admin/login/", secure=True)
    assert response["Strict-Transport-Security"] == "max-age=31536000"
    assert response.cookies["csrftoken"]["secure"] is True


# --- Content-Security-Policy ------------------------------------------------------------------------------------


@pytest.fixture
def pages(roles):
    """Every kind of page a signed-in person opens: the admin's lists and forms (facts, conflict sets, a trace, an
    identity block), the stats page, Swagger UI."""
    fact = FactFactory(text="Alice is allergic to peanuts.")
    trace = record_call(at=timezone.now() - timedelta(hours=1), facts=[(fact, "included")])
    return [
        "/admin/",
        "/admin/facts/fact/",
        f"/admin/facts/fact/{fact.pk}/change/",
        "/admin/facts/conflictset/",
        f"/admin/traces/trace/{trace}/change/",
        "/admin/facts/identityblock/add/",
        "/stats/",
        "/docs",
    ]


INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*type=\"application/json\")[^>]*>", re.IGNORECASE)
EVENT_HANDLER = re.compile(r"<[^>]+\son[a-z]+=", re.IGNORECASE)


def test_every_page_carries_the_policy_and_no_script_it_would_refuse(settings, pages):
    # given the login page, and a signed-in administrator's pages
    client = Client()
    client.force_login(User.objects.create_superuser("ada", password="pw-ada-long-enough"))
    for response, url in [(Client().get("/admin/login/"), "/admin/login/"), *((client.get(url), url) for url in pages)]:
        assert response.status_code == 200, url
        # then the page carries the policy, and holds no inline script or event handler (the policy refuses both)
        assert response["Content-Security-Policy"] == settings.HAKI_CSP, url
        html = response.content.decode()
        assert not INLINE_SCRIPT.findall(html) and not EVENT_HANDLER.findall(html), url
    # and Swagger UI's start-up script is a file of its own, from this origin
    script = client.get("/docs?script=")
    assert script.status_code == 200 and script["Content-Type"].startswith("application/javascript")
    assert "SwaggerUIBundle" in script.content.decode()
    # the API's answers carry it too
    assert "Content-Security-Policy" in Client().get("/v1/health/live")


def test_the_policy_can_be_turned_off_or_replaced(settings):
    settings.HAKI_CSP = ""
    assert "Content-Security-Policy" not in Client().get("/admin/login/")
    settings.HAKI_CSP = "default-src 'none'"
    assert Client().get("/admin/login/")["Content-Security-Policy"] == "default-src 'none'"


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_pages_work_in_a_browser_under_the_policy(browser, roles):
    """Chromium reports every refusal of the policy (securitypolicyviolation); the pages must cause none."""
    from selenium.webdriver.support.ui import WebDriverWait

    fact = FactFactory(text="Alice is allergic to peanuts.")
    trace = record_call(at=timezone.now() - timedelta(hours=1), facts=[(fact, "included")])
    User.objects.create_superuser("ada", password="pw-ada-long-enough")
    browser.driver.execute_cdp_cmd(
        "Page.addScriptToEvaluateOnNewDocument",
        {
            "source": (
                "window.refused = []; document.addEventListener('securitypolicyviolation',"
                " e => window.refused.push(e.violatedDirective + ' ' + e.blockedURI));"
            )
        },
    )
    browser.visit("/admin/", "csp-1-login")
    browser.log_in("ada", "pw-ada-long-enough", "csp-2-admin")
    for name, url in [
        ("facts", "/admin/facts/fact/"),
        ("fact", f"/admin/facts/fact/{fact.pk}/change/"),
        ("trace", f"/admin/traces/trace/{trace}/change/"),
        ("stats", "/stats/"),
        ("docs", "/docs"),
    ]:
        browser.visit(url, f"csp-3-{name}")
        if name == "docs":  # Swagger UI drew the operations from the schema it fetched
            WebDriverWait(browser.driver, 20).until(lambda d: d.find_elements("css selector", ".opblock"))
        assert browser.driver.execute_script("return window.refused") == [], url


# --- passwords ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("password", ["short1", "password123", "12345678901", "alice-smith"])
def test_a_weak_password_is_refused(password):
    user = User(username="alice-smith", first_name="Alice", last_name="Smith")
    with pytest.raises(ValidationError):
        validate_password(password, user)
    validate_password("correct horse battery staple", user)


# --- make run's secrets ---------------------------------------------------------------------------------------


def test_make_run_prints_where_its_secrets_are_never_the_secrets(settings, tmp_path):
    # given a password file an older run left readable by everyone
    settings.VAR_DIR = tmp_path
    (tmp_path / "dev_admin_password").write_text("an-older-password")
    (tmp_path / "dev_admin_password").chmod(0o644)
    # when `make run` bootstraps
    out = io.StringIO()
    call_command("bootstrap_dev", stdout=out)
    printed = out.getvalue()
    key, password = (tmp_path / "dev_api_key").read_text(), (tmp_path / "dev_admin_password").read_text()
    # then neither secret is printed, the output says where each is, and only their owner may read them
    assert key not in printed and password not in printed
    assert f"{tmp_path / 'dev_api_key'}" in printed and f"{tmp_path / 'dev_admin_password'}" in printed
    # and it says it is for a laptop, and where a deployment is described
    assert "for a laptop" in printed and "docs/deploy.md" in printed
    for name in ("dev_api_key", "dev_admin_password"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o600
    # and what the README's first call reads, `KEY=$(cat var/dev_api_key)`, is a working key; the password logs in
    assert ApiKey.objects.filter(key_hash=hash_key(key.strip()), project_id="demo", revoked_at__isnull=True).exists()
    assert password == "an-older-password" and Client().login(username="admin", password=password)


# --- logs -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "logged"),
    [
        ("/v1/subjects/alice", "/v1/subjects/-"),
        ("/v1/subjects/alice%20smith/consents/health", "/v1/subjects/-/consents/health"),
        (
            f"/v1/facts?project_id={PROJECT}&subject_id=alice&limit=5",
            f"/v1/facts?project_id={PROJECT}&subject_id=-&limit=5",
        ),
        ("/admin/facts/fact/?subject_id__exact=alice&q=peanuts", "/admin/facts/fact/?subject_id__exact=-&q=-"),
        ("/admin/facts/fact/?subject%5Fid=alice", "/admin/facts/fact/?subject%5Fid=-"),
        (
            "https://memory.example.com/admin/facts/fact/?subject_id=alice",
            "https://memory.example.com/admin/facts/fact/?subject_id=-",
        ),
        ("/v1/context", "/v1/context"),
    ],
)
def test_a_url_is_logged_without_its_subject_ids(url, logged):
    assert redacted_url(url) == logged


def access_line(tmp_path, monkeypatch, subject_ids: str) -> str:
    """What gunicorn's access log (config/gunicorn.py's logger) writes for one request."""
    monkeypatch.setenv("HAKI_LOG_SUBJECT_IDS", subject_ids)
    log = tmp_path / f"access-{subject_ids}.log"
    config = Config()
    config.set("accesslog", str(log))
    logger = AccessLogger(config)
    environ = {
        "REQUEST_METHOD": "GET",
        "RAW_URI": "/v1/facts?subject_id=alice",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "PATH_INFO": "/v1/facts",
        "QUERY_STRING": "subject_id=alice",
        "REMOTE_ADDR": "10.0.0.1",
        "HTTP_REFERER": "https://memory.example.com/admin/facts/fact/?subject_id__exact=alice",
    }
    response = SimpleNamespace(status="200 OK", sent=12, headers=[])
    logger.access(response, SimpleNamespace(headers=[]), environ, timedelta(milliseconds=5))
    return log.read_text()


def test_the_access_log_shows_subject_ids_only_when_told_to(tmp_path, monkeypatch):
    line = access_line(tmp_path, monkeypatch, "off")
    assert '"GET /v1/facts?subject_id=- HTTP/1.1" 200' in line and "alice" not in line
    assert "alice" in access_line(tmp_path, monkeypatch, "on")


def crash(request, subject_id=None):
    raise RuntimeError("a bug in a page")


urlpatterns = [path("v1/subjects/<str:subject_id>/crash", crash), path("stats/crash", crash), *root_urlpatterns]


@pytest.fixture
def error_log():
    """What the configured django.request handler writes (settings.LOGGING)."""
    handler = logging.getLogger("django.request").handlers[0]
    stream = io.StringIO()
    previous = handler.setStream(stream)
    yield stream
    handler.setStream(previous)


@pytest.mark.urls(__name__)
def test_a_crash_outside_the_api_leaves_its_traceback_without_subject_ids(error_log, monkeypatch):
    from facts.admin.facts import FactAdmin

    # given an admin page that fails, and a page and an API URL that fail
    def boom(self, request):
        raise RuntimeError("an admin list that fails")

    monkeypatch.setattr(FactAdmin, "get_queryset", boom)
    client = Client(raise_request_exception=False)
    client.force_login(User.objects.create_superuser("ada", password="pw-ada-long-enough"))
    assert client.get("/admin/facts/fact/").status_code == 500
    assert client.get("/v1/subjects/alice/crash").status_code == 500
    # and answers that are no crash
    assert client.get("/v1/nothing-here").status_code == 404
    # then the log holds each crash's traceback, without the subject id, and nothing else
    log = error_log.getvalue()
    assert "Internal Server Error: /admin/facts/fact/\nTraceback" in log
    assert "RuntimeError: an admin list that fails" in log
    assert "Internal Server Error: /v1/subjects/-/crash\nTraceback" in log and "alice" not in log
    assert log.count("Traceback") == 2 and "nothing-here" not in log
