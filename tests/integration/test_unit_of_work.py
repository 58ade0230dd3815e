"""The store's unit of work on a real database: kept only by commit, undone on failure, every
statement off the event loop, and the one door's conflict retry inside a unit."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, event, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError

from app.bootstrap import wire
from app.store.database import Database
from app.store.hops import Lane
from app.store.unit import SqlStore
from handlers.answers import StatusComment
from handlers.ports import Heard
from policies.commands import Claim, Publish
from policies.model import Actor, TicketKey
from policies.states import WorkState
from support.databases import sqlite_database
from tests.conftest import _empty as empty
from tests.fakes import REQUESTER, RUNNER, START, Comments

KEY = TicketKey("acme/web", 12)


async def test_a_unit_keeps_its_writes_only_when_it_reaches_commit(database: Database) -> None:
    """A unit left without `commit()` changes nothing; the same writes with `commit()` are kept."""
    store, comments = wire(database).store, Comments()
    async with store.unit() as uow:
        await uow.execute(KEY, Publish("Resumable uploads"), comments.context(REQUESTER))
        await uow.send(StatusComment(7, KEY.repository, KEY.number))
    async with store.read() as reads:
        assert await reads.ticket(KEY) is None
    async with store.unit() as uow:
        await uow.execute(KEY, Publish("Resumable uploads"), comments.context(REQUESTER))
        await uow.commit()
    async with store.read() as reads:
        ticket = await reads.ticket(KEY)
    assert ticket is not None and ticket.exists


async def test_a_unit_whose_handler_fails_writes_nothing(database: Database) -> None:
    """An exception inside the unit rolls every statement of it back and reaches the caller."""
    store, comments = wire(database).store, Comments()
    with pytest.raises(RuntimeError, match="GitHub went away"):
        async with store.unit() as uow:
            await uow.execute(KEY, Publish("Resumable uploads"), comments.context(REQUESTER))
            raise RuntimeError("GitHub went away")
    async with store.read() as reads:
        assert await reads.ticket(KEY) is None


async def test_a_committed_unit_cannot_write_again(database: Database) -> None:
    """After `commit()` the unit is over: a second commit is an error, not a silent no-op."""
    store = wire(database).store
    async with store.unit() as uow:
        await uow.commit()
        with pytest.raises(RuntimeError, match="already ended"):
            await uow.commit()


async def test_statements_run_off_the_event_loop_thread(database: Database) -> None:
    """While a unit holds the write lock, the loop keeps running: its statements are on another thread."""
    store, comments = wire(database).store, Comments()
    loop_thread = threading.get_ident()
    seen: list[int] = []
    original = database.write

    @contextmanager
    def spying_write() -> Iterator[Connection]:
        seen.append(threading.get_ident())  # the transaction begins here, on the unit's thread
        with original() as connection:
            yield connection

    database.write = spying_write  # type: ignore[method-assign]
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    ticking = asyncio.create_task(tick())
    async with store.unit() as uow:
        before = ticks
        await uow.execute(KEY, Publish("Resumable uploads"), comments.context(REQUESTER))
        await uow.commit()
    ticking.cancel()
    assert seen and loop_thread not in seen
    assert ticks > before


async def test_the_one_door_inside_a_unit_sees_the_units_own_writes(database: Database) -> None:
    """Inside one unit a claim finds the ticket published before it; a sign of life needs the ticket."""
    store, comments = wire(database).store, Comments()
    async with store.unit() as uow:
        heard = Heard(KEY, 1, START, "claim", "c-1")
        assert await uow.record_sign_of_life(heard) is False  # not a ticket yet
        await uow.execute(KEY, Publish("Resumable uploads"), comments.context(REQUESTER))
        claimed = await uow.execute(KEY, Claim(branch="agent/12"), comments.context(RUNNER))
        assert claimed.applied
        assert await uow.record_sign_of_life(heard) is True
        assert await uow.tickets_on_branch(KEY.repository, "agent/12", head_in_repository=True) == {12}
        await uow.commit()
    async with store.read() as reads:
        ticket = await reads.ticket(KEY)
    assert ticket is not None and ticket.work is WorkState.CLAIMED


async def test_concurrent_units_on_one_ticket_both_land(database: Database) -> None:
    """Two units changing one ticket at once: both commit, in some order, none lost (a conflict is
    retried from a savepoint on PostgreSQL; SQLite's writers queue)."""
    store, comments = wire(database).store, Comments()
    async with store.unit() as uow:
        await uow.execute(KEY, Publish("Resumable uploads"), comments.context(REQUESTER))
        await uow.commit()
    other = TicketKey("acme/web", 13)

    async def publish(key: TicketKey) -> None:
        async with store.unit() as uow:
            await uow.execute(key, Publish("Another"), comments.context(REQUESTER))
            await uow.execute(KEY, Claim(branch=f"agent/{key.number}"), comments.context(RUNNER))
            await uow.commit()

    await asyncio.gather(publish(other), publish(TicketKey("acme/web", 14)))
    async with store.read() as reads:
        ticket = await reads.ticket(KEY)
        history = await reads.history(KEY)
    assert ticket is not None and ticket.work is WorkState.CLAIMED
    assert [r.revision for r in history] == list(range(1, ticket.revision + 1))


async def test_a_queued_write_that_fails_fails_the_commit_and_keeps_nothing(database: Database) -> None:
    """A write nobody waited for that fails on the thread surfaces at `commit()`, and the unit is undone."""
    store, comments = wire(database).store, Comments()
    async with store.unit() as uow:
        await uow.execute(KEY, Publish("Resumable uploads"), comments.context(REQUESTER))
        await uow.set_repositories(7, [None], True, 0.0)  # type: ignore[list-item]
        with pytest.raises(AttributeError):
            await uow.commit()
    async with store.read() as reads:
        assert await reads.ticket(KEY) is None


async def test_an_attempt_opened_in_the_second_github_reports_a_merge_counts_as_before_it(
    database: Database,
) -> None:
    """Claimed at 09:00:05.300 (railyard's clock), merged at 09:00:05 (GitHub's whole second): the
    branch's ticket is one the PR linked when it merged; a claim a second later is not."""
    store, comments = wire(database).store, Comments()
    merged = datetime(2026, 12, 1, 9, 0, 5, tzinfo=UTC)
    async with store.unit() as uow:
        await uow.execute(KEY, Publish("Resumable uploads"), comments.context(REQUESTER))
        opened = merged + timedelta(milliseconds=300)
        await uow.execute(KEY, Claim(branch="agent/12"), comments.context(RUNNER, at=opened))
        await uow.commit()
    async with store.read() as reads:
        same_second = await reads.tickets_on_branch(
            KEY.repository, "agent/12", head_in_repository=True, reported_by=merged
        )
        a_second_before = await reads.tickets_on_branch(
            KEY.repository,
            "agent/12",
            head_in_repository=True,
            reported_by=merged - timedelta(seconds=1),
        )
        assert await reads.attempt_opened_by(KEY.repository, 12, merged)

    assert (same_second, a_second_before) == ({12}, set())


@contextmanager
def statement_threads(database: Database) -> Iterator[list[tuple[str, int]]]:
    """(statement, thread) for every statement the database's engines run inside the block."""
    seen: list[tuple[str, int]] = []

    def note(_conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
        seen.append((statement, threading.get_ident()))

    event.listen(Engine, "before_cursor_execute", note)
    try:
        yield seen
    finally:
        event.remove(Engine, "before_cursor_execute", note)


async def published(database: Database) -> SqlStore:
    """The database's store, with KEY published."""
    store, comments = wire(database).store, Comments()
    async with store.unit() as uow:
        await uow.execute(KEY, Publish("Resumable uploads"), comments.context(REQUESTER))
        await uow.commit()
    return store


async def test_on_sqlite_a_read_runs_on_the_loop_and_a_scan_on_a_thread(tmp_path: Path) -> None:
    """A read unit's point reads run on the event loop (no hop), but the reads whose rows grow
    with the repository (a ticket's whole log) run off it, on the same transaction."""
    database = sqlite_database(tmp_path / "railyard.db")
    try:
        store = await published(database)
        loop_thread = threading.get_ident()
        with statement_threads(database) as seen:
            async with store.read() as reads:
                ticket = await reads.ticket(KEY)
                history = await reads.history(KEY)
        assert ticket is not None and [r.revision for r in history] == list(range(1, ticket.revision + 1))
        scans = {thread for statement, thread in seen if "FROM ticket_events" in statement}
        others = {thread for statement, thread in seen if "FROM ticket_events" not in statement}
        assert scans and loop_thread not in scans
        assert others == {loop_thread}
    finally:
        database.close()


async def test_on_sqlite_a_read_the_loop_cannot_take_at_once_is_read_on_a_thread(tmp_path: Path) -> None:
    """When SQLite keeps the loop's own connection waiting past its bound (an OperationalError),
    `read_once` and `point_read_here` read again on a thread and still answer."""
    database = sqlite_database(tmp_path / "railyard.db")
    try:
        store = await published(database)
        loop_thread = threading.get_ident()

        @contextmanager
        def busy() -> Iterator[Connection]:
            raise OperationalError("SELECT", {}, sqlite3.OperationalError("database is locked"))
            yield  # pragma: no cover - never reached

        database.read_here = busy  # type: ignore[method-assign]
        threads: list[int] = []

        def revision(connection: Connection, key: TicketKey) -> int:
            threads.append(threading.get_ident())
            statement = text("SELECT revision FROM tickets WHERE number = :n")
            return int(connection.execute(statement, {"n": key.number}).scalar_one())

        assert await store.read_once(revision, KEY) == 2
        assert threads and loop_thread not in threads
        row = await database.point_read_here("SELECT revision FROM tickets WHERE number = ?", (KEY.number,))
        assert row == (2,)
    finally:
        database.close()


async def test_a_unit_open_while_the_store_closes_still_ends_and_its_thread_stops(database: Database) -> None:
    """Closing the store while a unit runs: the unit still commits, and its thread is not kept
    for another unit but ends after it (no thread left behind by a shutdown)."""
    store, comments = wire(database).store, Comments()
    with statement_threads(database) as seen:
        async with store.unit() as uow:
            await uow.execute(KEY, Publish("Resumable uploads"), comments.context(REQUESTER))
            store.close()
            await uow.commit()
    lanes = [t for t in threading.enumerate() if t.ident in {thread for _, thread in seen}]
    assert [lane.name for lane in lanes] == ["railyard-unit"]
    await asyncio.to_thread(lanes[0].join, 5)
    assert not lanes[0].is_alive()
    async with store.read() as reads:
        assert await reads.ticket(KEY) is not None


@pytest.mark.postgres
async def test_on_postgres_a_reads_ticket_and_command_count_come_from_the_loops_connections(
    postgres_database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outside a unit, the reads every command makes (its ticket, its author's commands in the
    last hour) run on the event loop's own connections, not through SQLAlchemy on a thread, and
    answer what the unit's own reads answer."""
    database = postgres_database
    empty(database)
    store, author = wire(database).store, Actor("rachel", REQUESTER.roles, id=4242)
    async with store.unit() as uow:
        await uow.execute(KEY, Publish("Resumable uploads"), Comments().context(author))
        await uow.commit()
    since = datetime(2000, 1, 1, tzinfo=UTC)
    jobs = count_lane_jobs(monkeypatch)
    with statement_threads(database) as seen:
        async with store.read() as reads:
            ticket = await reads.ticket(KEY)
            missing = await reads.ticket(TicketKey("acme/web", 999))
            recent = await reads.commands_since(KEY.repository.upper(), 4242, since)
            nobody = await reads.commands_since(KEY.repository, 4243, since)
    assert seen == []  # nothing through the engine
    assert jobs == []  # and the read's thread was given nothing, not even its end
    async with store.unit() as uow:  # the same reads inside a transaction, through SQLAlchemy
        assert ticket == await uow.ticket(KEY)
        assert recent == await uow.commands_since(KEY.repository, 4242, since) == 1
    assert ticket is not None and ticket.work == WorkState.OPEN
    assert missing is None and nobody == 0


def count_lane_jobs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the jobs given to any unit's thread (`Lane.post` and `Lane.call`) from now on."""
    given: list[str] = []
    post, call = Lane.post, Lane.call

    def counted_post(lane: Lane, function: Any, *args: Any) -> None:
        given.append(f"post {getattr(function, '__qualname__', function)}")
        post(lane, function, *args)

    def counted_call(lane: Lane, function: Any, *args: Any) -> Any:
        given.append(f"call {getattr(function, '__qualname__', function)}")
        return call(lane, function, *args)

    monkeypatch.setattr(Lane, "post", counted_post)
    monkeypatch.setattr(Lane, "call", counted_call)
    return given
