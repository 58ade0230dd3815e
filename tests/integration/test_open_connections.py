"""`Database.open_connections`: a process opens, at start, the PostgreSQL connections its
deliveries in flight will use, in each pool they come from, never more than each pool holds;
statements afterwards use them instead of opening more. SQLite opens nothing."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from app.store.database import Database
from app.store.limits import SharedLimits
from support.servers import server_for_tests, settings_for_tests
from tests.conftest import postgres_url, sqlite_database, worker_postgres_url


@dataclass
class Tagged:
    """A Database whose connections carry an application name of their own, so that the
    server can be asked how many it holds."""

    database: Database
    name: str
    server: str  # the URL the count is asked on
    url: str  # the Database's, with its application name

    def opened(self) -> int:
        """How many connections the Database holds on the server now."""
        engine = create_engine(self.server, isolation_level="AUTOCOMMIT")
        try:
            with engine.connect() as connection:
                found = connection.execute(
                    text("SELECT count(*) FROM pg_stat_activity WHERE application_name = :name"),
                    {"name": self.name},
                )
                return int(found.scalar_one())
        finally:
            engine.dispose()


@pytest.fixture
def tagged() -> Iterator[Tagged]:
    url = postgres_url()
    if url is None:
        pytest.skip("PostgreSQL not available: set RAILYARD_TEST_POSTGRES_URL (make test does)")
    server = worker_postgres_url(url, os.environ.get("PYTEST_XDIST_WORKER"))
    name = f"open-{uuid.uuid4().hex[:12]}"
    url_named = make_url(server).update_query_dict({"application_name": name})
    named = url_named.render_as_string(hide_password=False)
    database = Database(named, pool_size=10)
    yield Tagged(database, name, server, named)
    database.close()


@pytest.mark.postgres
@pytest.mark.asyncio
async def test_connections_for_the_work_in_flight_are_opened_at_start_and_then_used(
    tagged: Tagged,
) -> None:
    database = tagged.database
    assert tagged.opened() == 0  # nothing connects until asked
    await database.open_connections(3)
    # three in the engine's pool, three in each of the event loop's two sets
    assert tagged.opened() == 9
    await database.open_connections(3)
    assert tagged.opened() == 9  # what is open is kept, not opened again
    limits = SharedLimits(database)
    await limits.pause(7, until=160.0)  # a durable write on the loop
    assert await limits.paused_until(7, now=100.0) == 160.0  # a read on the loop
    with database.write() as connection:  # a unit on the engine's pool
        connection.execute(text("SELECT 1"))
    assert tagged.opened() == 9  # the statements used the connections opened at start


@pytest.mark.postgres
@pytest.mark.asyncio
async def test_never_more_than_each_pool_holds(tagged: Tagged) -> None:
    await tagged.database.open_connections(100)
    assert tagged.opened() == 10 + 4 + 4  # the engine's pool_size, the loop's two sets of four


@pytest.mark.asyncio
async def test_sqlite_opens_nothing_at_start(tmp_path: Path) -> None:
    database = sqlite_database(tmp_path / "railyard.db")
    try:
        idle = database.engine.pool.checkedin()  # type: ignore[attr-defined]
        await database.open_connections(4)
        assert database.engine.pool.checkedin() == idle  # type: ignore[attr-defined]
    finally:
        database.close()


@pytest.mark.asyncio
async def test_a_database_that_cannot_be_reached_is_said_at_start_as_sqlalchemys_error() -> None:
    """What the command line explains ("cannot use PostgreSQL at ...", `app.cli.errors`), not
    the driver's own error, which it would call unexpected."""
    database = Database("postgresql+psycopg://railyard@127.0.0.1:9/nowhere")
    try:
        with pytest.raises(DBAPIError) as raised:
            await database.open_connections(2)
        assert "127.0.0.1" in str(raised.value.orig)
    finally:
        database.close()


@pytest.mark.postgres
@pytest.mark.asyncio
async def test_a_server_with_a_worker_has_its_connections_open_once_it_started(tagged: Tagged) -> None:
    """`railyard serve`'s start (app.web.lifecycle): its worker's four deliveries' worth, in the
    engine's pool and the loop's two sets, before its first request."""
    async with server_for_tests(settings_for_tests(tagged.url)):
        assert tagged.opened() >= 12
