"""Shared fixtures: a migrated database on SQLite and, where available, PostgreSQL.

PostgreSQL tests need `RAILYARD_TEST_POSTGRES_URL` (`make test` starts a server and sets
it). Without it they are skipped, unless `RAILYARD_REQUIRE_POSTGRES=1` (CI), where a
missing server is an error rather than a silent skip.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from app.store.database import Database
from tests.fakes import reset_schema

APPEND_ONLY_AND_OTHER_TABLES = (
    "operations, delivery_records, attempts, ticket_events, tickets, "
    "webhook_deliveries, delivery_runs, installations, installation_repositories, outbox_effects, "
    "pull_requests, held_observations, signs_of_life, installation_limits, replies, http_cache, "
    "api_answers, api_budgets, web_sessions, repositories"
)


def postgres_url() -> str | None:
    """The test server's URL, or None (then skip, or fail when it is required)."""
    url = os.environ.get("RAILYARD_TEST_POSTGRES_URL")
    if url is None and os.environ.get("RAILYARD_REQUIRE_POSTGRES") == "1":
        pytest.fail("RAILYARD_REQUIRE_POSTGRES=1 but RAILYARD_TEST_POSTGRES_URL is not set")
    return url


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[Database]:
    """One PostgreSQL database for the session, rebuilt from the migrations at start."""
    url = postgres_url()
    if url is None:
        pytest.skip("PostgreSQL not available: set RAILYARD_TEST_POSTGRES_URL (make test does)")
    database = Database(url, pool_size=12)
    reset_schema(database)
    database.migrate()
    yield database
    database.close()


def _empty(database: Database) -> None:
    # TRUNCATE is not a row-level UPDATE or DELETE, so the append-only triggers allow it.
    with database.engine.begin() as connection:
        connection.execute(text(f"TRUNCATE {APPEND_ONLY_AND_OTHER_TABLES} RESTART IDENTITY CASCADE"))


def sqlite_database(path: Path) -> Database:
    """A fresh, migrated SQLite file."""
    database = Database(f"sqlite:///{path}", pool_size=12)
    database.migrate()
    return database


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
