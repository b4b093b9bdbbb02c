# Two commands on a fresh machine: `make run` serves hakimem on the embedded PostgreSQL, `make test` runs
# the whole suite. Both create .venv from requirements.txt when it is missing or older than the file.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
HAKI_PORT ?= 8000

.PHONY: run dev prepare test test-fast bench eval browser-deps

$(VENV)/.installed: requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

prepare: $(VENV)/.installed
	$(PY) manage.py migrate --noinput
	HAKI_PORT=$(HAKI_PORT) $(PY) manage.py bootstrap_dev
	$(PY) manage.py collectstatic --noinput --verbosity 0

# A laptop's server: gunicorn as a deployment runs it (workers from the cores, config/gunicorn.py; static files
# by whitenoise from var/static; DEBUG off), but on the embedded PostgreSQL under var/ unless DATABASE_URL is set, and
# after `prepare`, which creates a development superuser and API key. A real deployment: docs/operating.md.
# Ctrl-C stops gunicorn, not the embedded PostgreSQL: `kill -INT $(head -1 var/pgdata/postmaster.pid)` stops it.
run: prepare
	HAKI_PORT=$(HAKI_PORT) $(VENV)/bin/gunicorn -c python:config.gunicorn

# Django's development server (one process, a thread per request, reloads on code changes).
dev: prepare
	$(PY) manage.py runserver --insecure 127.0.0.1:$(HAKI_PORT)

# Browser tests drive Debian's chromium; install it when missing (CI starts without it).
browser-deps:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null) || \
	  echo "warning: could not install chromium; browser tests will be skipped"

# The tests get their own throw-away embedded server (deleted when pytest exits).
test: $(VENV)/.installed browser-deps
	HAKI_PGDATA=$(CURDIR)/var/pgdata-test HAKI_PGDATA_CLEANUP=delete $(PY) -m pytest $(PYTEST_ARGS)

# While working: everything but the browser tests (chromium), the real MiniLM model and the read replica's server. `make test` stays the
# one command that runs the whole suite.
test-fast: $(VENV)/.installed
	HAKI_PGDATA=$(CURDIR)/var/pgdata-test HAKI_PGDATA_CLEANUP=delete $(PY) -m pytest -m "not browser and not minilm and not replica" $(PYTEST_ARGS)
