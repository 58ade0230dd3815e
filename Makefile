# The two jobs a fresh machine needs: `make serve` and `make test`.
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: setup serve test lint pytest bench diagram

$(BIN)/railyard: pyproject.toml
	python3 -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

setup: $(BIN)/railyard

# Runs the server, worker, outbox and housekeeping in one process, on SQLite by default.
serve: setup
	$(BIN)/railyard serve

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# Starts this machine's PostgreSQL for the tests that need it (scripts/postgres-for-tests).
pytest: setup
	RAILYARD_TEST_POSTGRES_URL="$$(./scripts/postgres-for-tests)" $(BIN)/pytest

test: lint pytest

bench: setup
	$(BIN)/python bench/core.py --postgres "$$(./scripts/postgres-for-tests)"
	command -v wrk >/dev/null || apt-get install -y wrk
	$(BIN)/python bench/intake.py --postgres "$$(./scripts/postgres-for-tests)"
	$(BIN)/python bench/api_calls.py
	$(BIN)/python bench/sqlite_writes.py

diagram: setup
	$(BIN)/python scripts/render-diagram.py
