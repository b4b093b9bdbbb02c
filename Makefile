# Two commands on a fresh machine: `make run` serves hakimem on the embedded PostgreSQL, `make test` runs
# the whole suite. Both create .venv from requirements.txt when it is missing or older than the file.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
HAKI_PORT ?= 8000

.PHONY: run stop dev prepare test test-fast test-citus citus citus-stop bench eval browser-deps

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
# Ctrl-C stops gunicorn, not the embedded PostgreSQL (other commands may be using it): `make stop` stops both.
run: prepare
	HAKI_PORT=$(HAKI_PORT) $(VENV)/bin/gunicorn -c python:config.gunicorn --pid $(GUNICORN_PID)

# Stops what `make run` started: gunicorn (its requests drain first), then the embedded PostgreSQL of HAKI_PGDATA
# (var/pgdata by default) with a fast shutdown. Either may already be stopped.
PGDATA_DIR = $(or $(HAKI_PGDATA),var/pgdata)
GUNICORN_PID ?= var/gunicorn.pid
stop:
	@if [ -f $(GUNICORN_PID) ] && kill -TERM $$(cat $(GUNICORN_PID)) 2>/dev/null; then \
	  for i in $$(seq 50); do [ -f $(GUNICORN_PID) ] || break; sleep 0.5; done; echo "stopped gunicorn"; fi
	@if [ -f $(PGDATA_DIR)/postmaster.pid ] && kill -INT $$(head -1 $(PGDATA_DIR)/postmaster.pid) 2>/dev/null; then \
	  for i in $$(seq 60); do [ -f $(PGDATA_DIR)/postmaster.pid ] || break; sleep 0.5; done; \
	  echo "stopped the embedded PostgreSQL ($(PGDATA_DIR))"; else echo "the embedded PostgreSQL ($(PGDATA_DIR)) is not running"; fi

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

# A Citus cluster on this machine (coordinator + 2 workers under var/citus, ports 9700-9702) for the cluster tests and
# benchmarks, never the default database: builds Citus into the embedded installation the first time (1.5-10 minutes,
# from ../shared/vendor/citus-14.0.1.tar.gz), starts the nodes, migrates and distributes the schema (docs/scaling.md).
CITUS_URL = postgresql://postgres@127.0.0.1:$(or $(HAKI_CITUS_PORT),9700)/hakimem
citus: $(VENV)/.installed
	DATABASE_URL=$(CITUS_URL) $(PY) manage.py citus_cluster start
	DATABASE_URL=$(CITUS_URL) $(PY) manage.py migrate --noinput
	DATABASE_URL=$(CITUS_URL) $(PY) manage.py citus_distribute

citus-stop:
	DATABASE_URL=$(CITUS_URL) $(PY) manage.py citus_cluster stop

# The tests marked `citus`, against that cluster's database (tests/conftest.py: no test database is made there).
test-citus: citus
	DATABASE_URL=$(CITUS_URL) $(PY) -m pytest -m citus -p no:cacheprovider $(PYTEST_ARGS)
