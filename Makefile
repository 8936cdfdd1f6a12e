# RAG Gauntlet: `make app` serves the product, `make test` runs the whole suite. Both set up .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
HOST ?= 127.0.0.1
PORT ?= 8501
PG_DIR ?= .pg
# PostgreSQL port for `make app-postgres` (empty: the port the cluster last used, else a free one).
PG_PORT ?=
PYTEST := $(PY) -m pytest -n 2 --dist loadgroup -p no:cacheprovider --durations=30

.PHONY: app app-postgres stop-postgres test test-postgres test-postgres-all lint init-db chromium postgresql bench clean-venv

# Packages are installed by uv (from PyPI, into the venv; pip itself only fetches uv): the same versions pip resolves,
# in about 13 s of CPU instead of pip's 91 s (resolving, unpacking and compiling every module at install time; uv leaves
# bytecode to the first import). UV_CACHE_DIR and the other uv settings apply as usual.
UV := $(VENV)/bin/uv

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q uv
	$(UV) pip install -q --python $(PY) -e .
	touch $@

$(VENV)/.dev-installed: $(VENV)/.installed
	$(UV) pip install -q --python $(PY) -e '.[dev]'
	touch $@

init-db: $(VENV)/.installed
	$(PY) -m core.cli init-db
	$(PY) -m core.cli user first-admin

app: init-db
	$(PY) -m ui.serve --server.address $(HOST) --server.port $(PORT) --server.headless true

# Debian's chromium drives the browser tests (never `playwright install`: no browser downloads here).
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium >/dev/null; \
	  else echo "browser tests need Debian's chromium: sudo apt-get install chromium"; fi; }

test: $(VENV)/.dev-installed chromium postgresql
	$(PYTEST)

# Lint and types ([tool.ruff.lint], [tool.mypy] in pyproject.toml: zero errors on core/); CI runs it before the tests.
# mypy keeps its incremental cache outside the clone (MYPY_CACHE): it checks each file's hash against the cache, so a
# fresh clone reuses what an earlier run on this machine checked (about 1.5 s CPU instead of 50 s) and rechecks the rest.
MYPY_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/rag-gauntlet/mypy
lint: $(VENV)/.dev-installed
	$(VENV)/bin/ruff check core tests bench pages ui app.py
	$(VENV)/bin/mypy --cache-dir "$(MYPY_CACHE)" core

# PostgreSQL from the distribution's packages (server binaries under /usr/lib/postgresql/*/bin).
postgresql: $(VENV)/.installed
	@$(PY) -c "from core.testing.postgres import server_bin_dir; server_bin_dir()" 2>/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq postgresql >/dev/null; \
	  else echo "PostgreSQL tests need the server: sudo apt-get install postgresql"; exit 1; fi; }

# On PostgreSQL, the tests marked `db` at collection (those that get a database on the active backend; the rest give
# the same result on either backend), browser tests excepted (they run once, in `make test`): a cluster per xdist
# worker, or the admin URL in GAUNTLET_TEST_POSTGRES_URL. The whole suite on PostgreSQL: `make test-postgres-all`.
# Exit 5 (no test selected) passes with a message: the subset may be empty when a narrower selection is given.
test-postgres: $(VENV)/.dev-installed chromium postgresql
	GAUNTLET_TEST_BACKEND=postgresql $(PYTEST) -m "db and not browser" || { rc=$$?; [ $$rc -eq 5 ] && echo "== PostgreSQL pass: no test touches the database" || exit $$rc; }

test-postgres-all: $(VENV)/.dev-installed chromium postgresql
	GAUNTLET_TEST_BACKEND=postgresql $(PYTEST)

# A local cluster under $(PG_DIR)/ (kept between runs; stop: make stop-postgres), migrated, serving the app.
app-postgres: $(VENV)/.installed postgresql
	@url=$$($(PY) -m core.testing.postgres start $(PG_DIR) $(if $(PG_PORT),--port $(PG_PORT)) --database gauntlet) && echo "database: $$url" && \
	  GAUNTLET_DATABASE_URL=$$url $(PY) -m core.cli init-db && GAUNTLET_DATABASE_URL=$$url $(PY) -m core.cli user first-admin && \
	  GAUNTLET_DATABASE_URL=$$url exec $(PY) -m ui.serve --server.address $(HOST) --server.port $(PORT) --server.headless true

stop-postgres:
	$(PY) -m core.testing.postgres stop $(PG_DIR)

bench: $(VENV)/.dev-installed
	for f in bench/bench_*.py; do m=bench.$$(basename $$f .py); echo "== $$m"; $(PY) -m $$m || exit 1; done

clean-venv:
	rm -rf $(VENV)
