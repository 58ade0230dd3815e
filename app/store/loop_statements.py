"""PostgreSQL statements on the event loop itself, through psycopg's asyncio connections.

The reads taken before every GitHub call (a rate-limit pause, a kept ETag) are one primary-key
SELECT each, and many of the writes around a command are one statement each (a budget spent
and given back, a write slot, an outbox lease, a delivery's claim and outcome). Handed to a
thread, each costs a hop there and back: a queue, a futex wake, the interpreter lock changing
hands twice, the loop woken through its self-pipe, and a connection checked out of the engine's
pool. Under load on two cores that switching was the largest share of the kernel's part of a
command's CPU (`docs/benchmarks.md`). An asyncio connection sends the statement and waits for
the answer on the loop, as an HTTP call does: 0.07 to 0.09 ms of CPU a read against 0.27 to 0.41
through a thread, measured side by side. Waiting, for an answer or a row lock, holds nothing up:
the loop runs everything else meanwhile.

`LoopStatements` keeps up to `size` autocommitting connections (each statement is its own
transaction: one round trip), opened when first needed on the running loop, each running
`setup` once when it opens (`SET synchronous_commit = on` for durable writes, whatever the URL
or the server's default, `off` for bookkeeping). A connection that fails is closed and never
reused, and one the server dropped takes the idle ones with it (they went with the same server,
as SQLAlchemy's pool invalidates its own): one statement fails after a restart, not one per
connection. The error comes out as SQLAlchemy's, as it would from `Database.point_read`. A
statement cancelled while it runs closes its connection: PostgreSQL then either committed it or
rolls it back, as with a process that dies.

Connections belong to the loop that opened them: used from another loop (tests run one loop
each), the old ones are closed and new ones opened. A process uses one loop at a time (the
server's or the worker's); two loops in two threads sharing one `Database` would keep closing
each other's connections.

Each process holds up to `size` of these beside the engine's pool and the bookkeeping pool
(`Database.bookkeeping_postgres`): see "PostgreSQL connections" in `docs/operating.md`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg.pq import ExecStatus
from sqlalchemy.exc import DBAPIError

CONNECT_TIMEOUT_SECONDS = 10
Parameters = tuple[Any, ...] | dict[str, Any]
TUPLES_OK = ExecStatus.TUPLES_OK


class LoopStatements:
    """Up to `size` asyncio connections for one-statement reads and writes on the event loop."""

    def __init__(
        self,
        connect_args: Callable[[], tuple[Any, dict[str, Any]]],
        size: int = 4,
        setup: tuple[str, ...] = (),
    ) -> None:
        """`connect_args()`: the positional and keyword arguments of `psycopg.connect` (the
        engine's own, so the URL, password and options are the same as every other connection's)."""
        self._connect_args = connect_args
        self._size = size
        self._setup = setup
        # Each idle connection as the one cursor every statement on it runs through (a cursor
        # made per statement, with its adapters, cost a tenth of a point read's CPU).
        self._idle: list[psycopg.AsyncCursor[Any]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._slots = asyncio.Semaphore(size)

    async def open(self, count: int) -> None:
        """Have up to `count` connections (never more than `size`) open and idle, on the running
        loop: opened now, before any statement needs one."""
        self._on_running_loop()
        while len(self._idle) < min(count, self._size):
            cursor = await self._connect()
            self._idle.append(cursor)  # the list of now: `close` may have replaced it meanwhile

    async def first_row(self, statement: str, parameters: Parameters) -> tuple[Any, ...] | None:
        """The first row `statement` (psycopg placeholders) answers, or None."""
        rows = await self._run(statement, parameters, everything=False)
        return rows[0] if rows else None

    async def all_rows(self, statement: str, parameters: Parameters) -> list[tuple[Any, ...]]:
        """Every row `statement` (psycopg placeholders) answers (none for a write without RETURNING)."""
        return await self._run(statement, parameters, everything=True)

    async def _run(
        self, statement: str, parameters: Parameters, *, everything: bool
    ) -> list[tuple[Any, ...]]:
        self._on_running_loop()
        idle, slots = self._idle, self._slots
        async with slots:  # at most `size` statements at once, each on a connection of its own
            cursor = idle.pop() if idle else await self._connect()
            try:
                await cursor.execute(statement, parameters)
                answer = cursor.pgresult
                if answer is None or answer.status != TUPLES_OK:  # a statement that returns no rows
                    rows: list[tuple[Any, ...]] = []
                elif everything:
                    rows = await cursor.fetchall()
                else:
                    row = await cursor.fetchone()
                    rows = [] if row is None else [row]
            except psycopg.Error as error:
                _drop(cursor)
                if cursor.connection.broken:  # the server went away (a restart, a failover), the others too
                    self.close()
                raise DBAPIError.instance(statement, parameters, error, psycopg.Error) from error
            except BaseException:  # cancelled mid-statement: the connection's state is unknown
                _drop(cursor)
                raise
            if idle is self._idle:
                idle.append(cursor)
            else:  # closed, or moved to another loop, while this statement ran
                _drop(cursor)
        return rows

    def _on_running_loop(self) -> None:
        """Connections and the semaphore belong to one loop: another's are closed first."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self.close()
            self._loop, self._slots = loop, asyncio.Semaphore(self._size)

    def close(self) -> None:
        """Close every idle connection (from any thread: no loop is needed to drop a socket).
        A statement still running closes its connection when it ends."""
        idle, self._idle = self._idle, []
        while idle:
            _drop(idle.pop())

    async def _connect(self) -> psycopg.AsyncCursor[Any]:
        args, kwargs = self._connect_args()
        options = {"connect_timeout": CONNECT_TIMEOUT_SECONDS, **kwargs, "autocommit": True}
        try:
            connection = await psycopg.AsyncConnection.connect(*args, **options)
            try:
                for statement in self._setup:
                    await connection.execute(statement)
            except BaseException:
                _finish(connection)
                raise
        except psycopg.Error as error:
            raise DBAPIError.instance("connect", (), error, psycopg.Error) from error
        return connection.cursor()


def _drop(cursor: psycopg.AsyncCursor[Any]) -> None:
    """Close the cursor's connection (`_finish`)."""
    _finish(cursor.connection)


def _finish(connection: psycopg.AsyncConnection[Any]) -> None:
    """Close the connection's socket without the loop (libpq's own close)."""
    with contextlib.suppress(Exception):
        connection.pgconn.finish()
