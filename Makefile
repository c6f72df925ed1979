# tether — `make demo` and `make test` set everything up on a fresh machine.
VENV ?= .venv
PY := $(VENV)/bin/python
PYTHON ?= python3
STAMP := $(VENV)/.installed

.PHONY: help install demo test screenshots lint format bench bench-store bench-floor bench-engine bench-http bench-postgres bench-lock bench-telemetry clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  %-15s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[postgres,otel,metrics,dev]'
	touch $(STAMP)

install: $(STAMP) ## create .venv and install tether with its test tools

demo: $(STAMP) ## play the seed scenario end to end on ./tether.db (kept afterwards)
	$(VENV)/bin/tether demo

test: $(STAMP) ## the whole test suite
	$(PY) -m pytest

screenshots: $(STAMP) ## refresh the UI screenshots in docs/images (a real Chromium)
	TETHER_SCREENSHOTS=docs/images $(PY) -m pytest -q tests/ui/test_ui_docs.py -k screenshots

lint: $(STAMP) ## ruff and mypy --strict
	$(VENV)/bin/ruff check src tests $(wildcard bench)
	$(VENV)/bin/ruff format --check src tests $(wildcard bench)
	$(VENV)/bin/mypy

format: $(STAMP) ## format the code
	$(VENV)/bin/ruff format src tests bench
	$(VENV)/bin/ruff check --fix src tests bench

bench: bench-store bench-floor bench-engine bench-http bench-postgres bench-lock bench-telemetry ## all benchmarks (bench/), printed as tables

bench-store: $(STAMP) ## store append cost vs history length (H = 100 … 100k; normal and full)
	$(PY) bench/store_append.py

bench-floor: $(STAMP) ## the SQL floor under one append: tether's statements and the leanest schema, raw
	$(PY) bench/append_floor.py

bench-engine: $(STAMP) ## engine runs/s and per-run overhead, with where the time goes
	$(PY) bench/engine.py

bench-http: $(STAMP) ## the HTTP service under load
	$(PY) bench/http_load.py

bench-lock: $(STAMP) ## /healthz and SSE heartbeats while another process holds SQLite's lock
	$(PY) bench/lock_wait.py --hold 8
	$(PY) bench/lock_wait.py --hold 12

bench-postgres: $(STAMP) ## PostgreSQL: runs/s with 1, 2, 4 worker processes; append cost vs history
	$(PY) bench/postgres.py

bench-telemetry: $(STAMP) ## CPU per run with metrics, tracing or both on, vs off
	$(PY) bench/telemetry.py

clean: ## remove the virtualenv and caches
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
