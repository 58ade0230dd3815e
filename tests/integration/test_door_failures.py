"""What the one door raises when its connection is lost or its statement interrupted in the middle
of a write: the error that ended it (a lost connection is what the worker backs off and retries
on; Ctrl-C stays Ctrl-C), never one about the savepoint it could no longer go back to. Nothing
of the interrupted write is kept, and the door works again on the next connection."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from sqlalchemy import event, func, select
from sqlalchemy.exc import OperationalError

from app.store.database import Database
from app.store.tickets import TicketService, events_table
from policies.commands import Claim, Publish
from policies.model import TicketKey
from tests.conftest import _empty as empty
from tests.fakes import REQUESTER, RUNNER, Comments

KEY = TicketKey("acme/web", 31)


def published(database: Database) -> tuple[TicketService, Comments]:
    service, comments = TicketService(database), Comments()
    assert service.execute(KEY, Publish("Ship the door"), comments.context(REQUESTER)).applied
    return service, comments


@pytest.fixture
def on_postgres(postgres_database: Database) -> Iterator[Database]:
    """The PostgreSQL test database, emptied (a session to lose is a server's)."""
    empty(postgres_database)
    yield postgres_database


def events(database: Database) -> int:
    with database.read() as connection:
        return int(connection.execute(select(func.count()).select_from(events_table)).scalar_one())


def on_the_events_insert(database: Database, act: Any) -> Any:
    """Run `act(cursor)` before the door's insert of an event, once."""
    done: list[bool] = []

    def before(_conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        if not done and statement.startswith("INSERT INTO ticket_events"):
            done.append(True)
            act(cursor)

    event.listen(database.engine, "before_cursor_execute", before)
    return before


@pytest.mark.postgres
def test_a_connection_lost_inside_the_door_raises_the_databases_own_error(on_postgres: Database) -> None:
    database = on_postgres
    service, comments = published(database)

    def terminate(cursor: Any) -> None:  # the server ends this session, as a restart would
        pid = cursor.connection.info.backend_pid
        url = database.engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
        with psycopg.connect(url, autocommit=True) as other:
            other.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,))

    hook = on_the_events_insert(database, terminate)
    try:
        before = events(database)
        with pytest.raises(OperationalError):  # not PendingRollbackError: the worker retries this one
            service.execute(KEY, Claim(branch="agent/31"), comments.context(RUNNER))
    finally:
        event.remove(database.engine, "before_cursor_execute", hook)
    assert events(database) == before  # nothing of the write kept
    assert service.execute(KEY, Claim(branch="agent/31"), comments.context(RUNNER)).applied


def test_an_interrupted_statement_inside_the_door_stays_an_interruption(database: Database) -> None:
    service, comments = published(database)

    def interrupt(_cursor: Any) -> None:
        raise KeyboardInterrupt

    hook = on_the_events_insert(database, interrupt)
    try:
        before = events(database)
        with pytest.raises(KeyboardInterrupt):
            service.execute(KEY, Claim(branch="agent/31"), comments.context(RUNNER))
    finally:
        event.remove(database.engine, "before_cursor_execute", hook)
    assert events(database) == before
    assert service.execute(KEY, Claim(branch="agent/31"), comments.context(RUNNER)).applied
