# RAG Gauntlet: `make app` serves the product, `make test` runs the whole suite. Both set up .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
HOST ?= 127.0.0.1
PORT ?= 8501

.PHONY: app test init-db chromium bench clean-venv

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e .
	touch $@

$(VENV)/.dev-installed: $(VENV)/.installed
	$(PIP) install -q -e '.[dev]'
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

test: $(VENV)/.dev-installed chromium
	$(PY) -m pytest -n 2 -p no:cacheprovider

bench: $(VENV)/.dev-installed
	for f in bench/bench_*.py; do echo "== $$f"; $(PY) $$f || exit 1; done

clean-venv:
	rm -rf $(VENV)
