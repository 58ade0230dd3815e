# The two jobs a fresh machine needs: `make demo` and `make test`; `make check` is the fast lane;
# `make serve` runs the real thing (setup mode until the GitHub App is registered).
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: setup demo serve test check lint pytest bench bench-probot diagram lock wheel

# The locked versions (with their hashes) first, then railyard itself without resolving again.
$(BIN)/railyard: pyproject.toml requirements-dev.lock
	python3 -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --require-hashes -r requirements-dev.lock
	$(BIN)/pip install --quiet --no-deps -e .
	touch $@

setup: $(BIN)/railyard

# Re-resolves both lock files from pyproject.toml (run it after changing a dependency; a test
# fails while a dependency is missing from them). For Python 3.11 on every platform.
UV_VERSION ?= 0.13.9
LOCK := --universal --no-strip-extras --python-version 3.11 --generate-hashes --custom-compile-command "make lock" --quiet
lock: setup
	$(BIN)/pip install --quiet "uv==$(UV_VERSION)"
	$(BIN)/uv pip compile pyproject.toml $(LOCK) --output-file requirements.lock
	$(BIN)/uv pip compile pyproject.toml --extra dev $(LOCK) --output-file requirements-dev.lock

# railyard's sdist and wheel in dist/ (the wheel built from the unpacked sdist, so no stale
# build/ files get in), as tests/e2e/test_wheel_install.py builds it.
wheel: setup
	$(BIN)/python -m build --outdir dist .

# The real server on a temporary SQLite database against the GitHub stand-in (github_standin),
# in one process, with a story already played: the board at http://127.0.0.1:3000 (docs/demo.md).
demo: setup
	$(BIN)/railyard demo

# Runs the server, worker, outbox and housekeeping in one process, on SQLite by default.
serve: setup
	$(BIN)/railyard serve

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# Every test. Starts this machine's PostgreSQL for the tests that need it (scripts/postgres-for-tests),
# and installs Debian's chromium when missing, so the browser tests (setup page, ticket pages) run.
# Two passes: everything but `serial` on $(WORKERS) pytest-xdist workers (each its own PostgreSQL
# database, ports and temporary files), then the timing-sensitive `serial` tests alone.
# The 25 slowest tests of each pass are listed at its end. Markers and lanes: docs/testing.md.
# Eight workers on two cores: the end-to-end tests mostly wait (docs/testing.md). Tests are
# handed out two at a time in their collected order, so the `slow` ones, collected first,
# start at once on every worker (--maxschedchunk 2).
WORKERS ?= 8
DIST := -n $(WORKERS) --maxschedchunk 2
pytest: setup
	command -v chromium >/dev/null || { apt-get update -qq && apt-get install -y -qq chromium; }
	url="$$(./scripts/postgres-for-tests)" && \
	RAILYARD_TEST_POSTGRES_URL="$$url" $(BIN)/pytest $(DIST) -m "not serial" --durations=25 && \
	RAILYARD_TEST_POSTGRES_URL="$$url" $(BIN)/pytest -m serial --durations=25

# The lint runs beside the tests (mypy takes most of a minute on a fresh clone, and the tests
# mostly wait); either failing fails `make test`.
test: setup
	$(MAKE) --no-print-directory -j2 lint pytest

# The fast lane while working (under two minutes): lint, mypy, the pure core and the handlers
# against their fakes. No PostgreSQL, no browser, no processes (tests/unit's few `process`
# tests, actionlint, hadolint and the like, are left to `make test`).
check: lint
	$(BIN)/pytest -q -m "not process" tests/unit

bench: setup
	$(BIN)/python bench/core.py --postgres "$$(./scripts/postgres-for-tests)"
	command -v wrk >/dev/null || apt-get install -y wrk
	$(BIN)/python bench/intake.py --postgres "$$(./scripts/postgres-for-tests)"
	$(BIN)/python bench/api_calls.py
	$(BIN)/python bench/sqlite_writes.py

# Probot 13.4.7 (bench/probot/package-lock.json) into bench/probot/node_modules, for the
# reference bench/intake.py measures railyard's intake against; needs node 20 and npm.
bench-probot:
	npm ci --prefix bench/probot --no-audit --no-fund

diagram: setup
	$(BIN)/python scripts/render-diagram.py
