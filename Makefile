# tether — `make demo` and `make test` set everything up on a fresh machine.
VENV ?= .venv
PY := $(VENV)/bin/python
PYTHON ?= python3
STAMP := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.installed-demo
DOCS_STAMP := $(VENV)/.installed-docs
#: The suite's worker processes (pytest-xdist): one per core.
JOBS ?= auto
#: make test fails below this share of lines and branches run (measured, then set a little below).
COVERAGE_FLOOR := 90

.PHONY: help install demo test test-fast screenshots lint docs format bench bench-store bench-floor bench-conversation bench-message-events bench-engine bench-http bench-http-reads bench-asgi bench-postgres bench-peers bench-storage bench-telemetry bench-lock bench-cli clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  %-15s %s\n", $$1, $$2}'

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

# The demo's extras: the command, and the server and web UI its closing lines point to.
$(DEMO_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install -q -e '.[cli,ui]'
	touch $(DEMO_STAMP)

$(DOCS_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install -q -e '.[docs]'
	touch $(DOCS_STAMP)

install: $(STAMP) ## create .venv and install tether with every extra and its test tools

demo: $(DEMO_STAMP) ## play the seed scenario end to end on ./tether.db (kept afterwards)
	$(VENV)/bin/tether demo

test: $(STAMP) ## the whole test suite, in parallel, with coverage (fails below the floor)
	$(PY) -m pytest -n $(JOBS) --cov --cov-report=term:skip-covered --cov-fail-under=$(COVERAGE_FLOOR)

test-fast: $(STAMP) ## the suite without browser, PostgreSQL and slow tests (under a minute)
	$(PY) -m pytest -n $(JOBS) -q -m "not browser and not postgres and not slow"

screenshots: $(STAMP) ## refresh the UI screenshots in docs/images (a real Chromium)
	TETHER_SCREENSHOTS=docs/images $(PY) -m pytest -q tests/ui/test_ui_docs.py tests/ui/test_ui_runs_list.py tests/ui/test_ui_overview.py -k screenshots

lint: $(STAMP) ## ruff (with complexity), mypy --strict and the import-layer contracts
	$(VENV)/bin/ruff check src tests $(wildcard bench)
	$(VENV)/bin/ruff format --check src tests $(wildcard bench)
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

docs: $(DOCS_STAMP) ## build the documentation site into site/ (broken internal links fail it)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

format: $(STAMP) ## format the code
	$(VENV)/bin/ruff format src tests bench
	$(VENV)/bin/ruff check --fix src tests bench

bench: bench-store bench-floor bench-conversation bench-message-events bench-engine bench-http bench-http-reads bench-asgi bench-postgres bench-peers bench-storage bench-telemetry bench-lock bench-cli ## all benchmarks (bench/), printed as tables

bench-store: $(STAMP) ## store append cost vs history length (H = 100 … 100k; normal and full)
	$(PY) bench/store_append.py

bench-floor: $(STAMP) ## the SQL floor under one append: tether's statements and the leanest schema, raw
	$(PY) bench/append_floor.py

bench-conversation: $(STAMP) ## tail reads, whole reads and batch appends through the library vs bare SQL
	$(PY) bench/conversation.py

bench-message-events: $(STAMP) ## message events by reference against full copies: appends, WAL pages, event reads
	$(PY) bench/message_events.py
bench-cli: $(STAMP) ## the tether command reading a conversation, as processes, vs a bare python -c read
	$(PY) bench/cli.py

bench-engine: $(STAMP) ## engine runs/s and per-run overhead, with where the time goes
	$(PY) bench/engine.py

bench-http: $(STAMP) ## the HTTP service under load
	$(PY) bench/http_load.py

bench-http-reads: $(STAMP) ## tail and whole conversation reads over /v1 vs bare SQL and a minimal FastAPI app
	$(PY) bench/http_reads.py

bench-asgi: $(STAMP) ## the server's CPU per request in process (ASGI) beside a minimal FastAPI app
	$(PY) bench/asgi_requests.py

bench-lock: $(STAMP) ## /healthz and SSE heartbeats while another process holds SQLite's lock
	$(PY) bench/lock_wait.py --hold 8
	$(PY) bench/lock_wait.py --hold 12

bench-postgres: $(STAMP) ## PostgreSQL: runs/s with 1, 2, 4 worker processes; append cost vs history
	$(PY) bench/postgres.py

bench-peers: $(STAMP) ## tether beside the Agents SDK, ADK and LangGraph session stores (installs .[bench])
	$(PY) -m pip install -q -e '.[bench]'
	$(PY) bench/peers.py

bench-storage: $(STAMP) ## bytes a run adds in a long session, beyond its steps and messages
	$(PY) bench/run_storage.py

bench-telemetry: $(STAMP) ## CPU per run with metrics, tracing or both on, vs off
	$(PY) bench/telemetry.py

clean: ## remove the virtualenv and caches
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .import_linter_cache .coverage site
