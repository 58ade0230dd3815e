"""Shared fixtures: a migrated database on SQLite and, where available, PostgreSQL; the lanes.

PostgreSQL tests need `RAILYARD_TEST_POSTGRES_URL` (`make test` starts a server and sets
it). Without it they are skipped, unless `RAILYARD_REQUIRE_POSTGRES=1` (CI), where a
missing server is an error rather than a silent skip. Under pytest-xdist each worker gets
its own database next to that one (`<name>_gw0`, `<name>_gw1`, ...), created on demand.

The lanes (docs/testing.md) are markers set here from where a test lives and what it uses,
so a new test file needs none of its own: `e2e` (tests/e2e), `browser` (the `browser`
fixture: headless chromium), `postgres` (the PostgreSQL database), `process` (starts
processes or external tools), `slow` (the slowest files, from `--durations`), `serial`
(timing-sensitive: `make test` runs them alone after the parallel pass).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, make_url, text

from app.store.database import Database
from support.databases import reset_schema
from support.databases import sqlite_database as sqlite_database

APPEND_ONLY_AND_OTHER_TABLES = (
    "operations, delivery_records, attempts, ticket_events, tickets, "
    "webhook_deliveries, delivery_runs, installations, installation_repositories, outbox_effects, "
    "pull_requests, held_observations, signs_of_life, installation_limits, replies, http_cache, "
    "api_answers, api_budgets, web_sessions, repositories, installation_tokens, agent_accounts, "
    "gate_approvals"
)


def postgres_url() -> str | None:
    """The test server's URL, or None (then skip, or fail when it is required)."""
    url = os.environ.get("RAILYARD_TEST_POSTGRES_URL")
    if url is None and os.environ.get("RAILYARD_REQUIRE_POSTGRES") == "1":
        pytest.fail("RAILYARD_REQUIRE_POSTGRES=1 but RAILYARD_TEST_POSTGRES_URL is not set")
    return url


def worker_postgres_url(url: str, worker: str | None) -> str:
    """This xdist worker's own database on the same server (created when missing), or `url` itself.

    The role needs CREATEDB (scripts/postgres-for-tests creates it so).
    """
    if worker is None or worker == "master":
        return url
    if not re.fullmatch(r"gw[0-9]+", worker):
        raise ValueError(f"unexpected PYTEST_XDIST_WORKER {worker!r}")
    base = make_url(url)
    name = f"{base.database}_{worker}"
    engine = create_engine(base, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as connection:
            found = connection.execute(
                text("SELECT 1 FROM pg_database WHERE datname = :name"), {"name": name}
            )
            if found.first() is None:
                connection.execute(text(f'CREATE DATABASE "{name}"'))
    finally:
        engine.dispose()
    return base.set(database=name).render_as_string(hide_password=False)


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[Database]:
    """One PostgreSQL database for the session (one per xdist worker), rebuilt from the migrations."""
    url = postgres_url()
    if url is None:
        pytest.skip("PostgreSQL not available: set RAILYARD_TEST_POSTGRES_URL (make test does)")
    database = Database(worker_postgres_url(url, os.environ.get("PYTEST_XDIST_WORKER")), pool_size=12)
    reset_schema(database)
    database.migrate()
    yield database
    database.close()


def _empty(database: Database) -> None:
    # TRUNCATE is not a row-level UPDATE or DELETE, so the append-only triggers allow it.
    with database.engine.begin() as connection:
        connection.execute(text(f"TRUNCATE {APPEND_ONLY_AND_OTHER_TABLES} RESTART IDENTITY CASCADE"))


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    """A migrated, empty database: a SQLite file, then the PostgreSQL test database."""
    if request.param == "sqlite":
        database = sqlite_database(tmp_path / "railyard.db")
        yield database
        database.close()
    else:
        database = request.getfixturevalue("postgres_database")
        _empty(database)
        yield database


TESTS = Path(__file__).resolve().parent

# Test files (under tests/) whose tests start processes or external tools: `railyard serve`, the
# stand-in as a subprocess, a private PostgreSQL cluster, pip and build, actionlint, hadolint.
# tests/unit marks its few such tests itself (`@pytest.mark.process`), so the rest of the file
# stays in `make check`; tests/unit/conftest.py fails an unmarked one that starts a process.
PROCESS_FILES = frozenset(
    {
        "e2e/test_crash.py",
        "e2e/test_errors.py",
        "e2e/test_kill_effects.py",
        "e2e/test_logs.py",
        "e2e/test_postgres_restart.py",
        "e2e/test_recovery.py",
        "e2e/test_scale_bench.py",
        "e2e/test_setup_page.py",
        "e2e/test_wheel_install.py",
        "integration/test_cli.py",
        "integration/test_postgres_workers.py",
    }
)

# The slowest tests (`--durations=30`): 8 s or more each alone, or 12 s in `make test`'s parallel
# pass (a whole file, or one test of it). `-m "not slow"` leaves them out; the parallel pass
# starts them first, so none of them is left running alone at its end.
SLOW = frozenset(
    {
        "e2e/test_chaos.py",
        "e2e/test_crash.py",
        "e2e/test_kill_effects.py",
        "e2e/test_postgres_takeover.py",
        "e2e/test_scale_bench.py",
        "e2e/test_wheel_install.py",
        "integration/test_lifecycle_properties.py",
        "integration/test_postgres_workers.py",
        "integration/test_rail_order.py::test_every_order_and_every_duplicate_ends_the_same",
        "integration/test_intake.py::test_any_sequence_of_batches_matches_a_set_of_ids",
        "integration/test_queue.py::test_claims_follow_per_ticket_order_whatever_happens",
        "integration/test_cli.py::test_the_installed_console_script_migrates_and_reports",
        "integration/test_lanes.py::test_a_worker_gets_a_database_of_its_own_created_on_first_use",
        "integration/test_supervisor.py::test_a_failing_loop_goes_on_and_healthz_is_503_past_its_limit_then_200",
        "unit/test_audit_chain.py::test_the_chain_breaks_at_exactly_the_edited_deleted_or_inserted_row",
        "unit/test_validate_cli.py::test_the_installed_command_exits_with_the_verdict",
        "unit/test_webhook_body.py::test_generated_bodies_read_as_their_parsed_dicts_do",
        "e2e/test_errors.py::test_a_bad_setting_is_explained_in_a_few_lines",
        "e2e/test_stalled_bodies.py::test_stalled_uploads_are_dropped_and_cannot_hold_more_than_the_cap",
        "e2e/test_rails_events.py::test_the_whole_repository_and_deployment_scenario_for_two_tickets",
        "e2e/test_rails_events.py::test_one_deployment_moves_every_merged_ticket_it_contains",
        "e2e/test_surfaces.py::test_ambiguous_failures_never_make_a_second_status_comment",
        "e2e/test_webhooks.py::test_a_body_over_25_mb_gets_413",
    }
)

# Timing-sensitive tests (a file, or one test of it), run alone after the parallel pass (`make test`:
# `-m serial`): the chaos campaign's settle time is not met next to another worker's tests, nor
# the demo's time to start.
SERIAL = frozenset(
    {
        "e2e/test_scale_bench.py",
        "e2e/test_chaos.py::test_a_short_chaos_campaign_finds_no_violation",
        "e2e/test_demo.py::test_the_demo_is_ready_within_30_seconds",
    }
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Sets the lane markers from where each test lives and which fixtures it uses, and puts
    the `slow` tests first (in their order), so a parallel run starts them before the rest."""
    del config
    for item in items:
        try:
            where = item.path.resolve().relative_to(TESTS).as_posix()
        except ValueError:
            continue
        fixtures = getattr(item, "fixturenames", ())
        if where.startswith("e2e/"):
            item.add_marker(pytest.mark.e2e)
        if "browser" in fixtures:
            item.add_marker(pytest.mark.browser)
        if "postgres_database" in fixtures and item.get_closest_marker("postgres") is None:
            item.add_marker(pytest.mark.postgres)
        if where in PROCESS_FILES:
            item.add_marker(pytest.mark.process)
        function = getattr(item, "originalname", item.name)
        if where in SLOW or f"{where}::{function}" in SLOW:
            item.add_marker(pytest.mark.slow)
        serial = where in SERIAL or f"{where}::{function}" in SERIAL
        if serial or item.get_closest_marker("bench") is not None:
            item.add_marker(pytest.mark.serial)
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
