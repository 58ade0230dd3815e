"""The store as handlers see it (`handlers.ports.Store`): reads and units of work, off the event loop.

A unit of work holds one connection and one transaction for its whole life, and runs every
statement on a thread of its own: SQLite's write lock is a thread's, and the event loop that
acknowledges webhooks never waits on a lock or an fsync. The threads are kept for the next
unit. `commit()` makes the unit's writes durable; leaving the block without it rolls them back.
"""

from __future__ import annotations

import asyncio
import functools
import queue
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from datetime import datetime
from types import TracebackType
from typing import Any, Generic, TypeVar

from sqlalchemy import Connection

from app.store import held, installations, pulls, signs, tickets
from app.store.database import Database
from app.store.effects import Effect, enqueue
from app.store.replies import Reply, enqueue_reply
from app.store.tickets import SurfacesFor
from handlers.answers import Answer
from handlers.ports import (
    Change,
    ChangeContext,
    Clock,
    Heard,
    Linked,
    MergedTicket,
    Outcome,
    PullRequest,
    RecordedEvent,
)
from policies.model import Ticket, TicketKey
from policies.rails import Observation

T = TypeVar("T")
Render = Callable[[Answer], Effect | Reply]
"""Turns an answer (an intent) into the effect or limited reply that writes it (`app.views.answers`)."""


class _Threads:
    """Single-thread executors, one per open unit, reused."""

    def __init__(self) -> None:
        self._idle: queue.SimpleQueue[ThreadPoolExecutor] = queue.SimpleQueue()

    def take(self) -> ThreadPoolExecutor:
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            return ThreadPoolExecutor(max_workers=1, thread_name_prefix="railyard-unit")

    def give_back(self, executor: ThreadPoolExecutor) -> None:
        self._idle.put(executor)

    def close(self) -> None:
        while True:
            try:
                self._idle.get_nowait().shutdown(wait=False)
            except queue.Empty:
                return


class SqlReads:
    """`handlers.ports.Reads` over one open connection, every statement on the unit's thread."""

    def __init__(self, executor: ThreadPoolExecutor, connection: Connection) -> None:
        self._executor = executor
        self._connection = connection

    async def _run(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        call = functools.partial(function, self._connection, *args, **kwargs)
        return await asyncio.get_running_loop().run_in_executor(self._executor, call)

    async def ticket(self, key: TicketKey) -> Ticket | None:
        """The ticket at its latest revision."""
        return await self._run(tickets.load, key)

    async def history(self, key: TicketKey) -> list[RecordedEvent]:
        """The ticket's event log."""
        return await self._run(tickets.history, key)

    async def commands_since(self, repository: str, actor_id: int, since: datetime) -> int:
        """Commands the account ran in the repository since `since`."""
        return await self._run(tickets.commands_since, repository, actor_id, since)

    async def stored_pull(self, repository: str, number: int) -> Linked | None:
        """A PR as last seen, with its links."""
        return await self._run(pulls.stored_pull, repository, number)

    async def pulls_where(
        self, repository: str, *, head_sha: str | None = None, head_ref: str | None = None
    ) -> list[Linked]:
        """Stored PRs with this head."""
        return await self._run(pulls.pulls_where, repository, head_sha=head_sha, head_ref=head_ref)

    async def tickets_on_branch(
        self,
        repository: str,
        branch: str,
        *,
        head_repository: str | None,
        reported_by: datetime | None = None,
    ) -> set[int]:
        """Tickets whose claim or delivery reported `branch`."""
        return await self._run(
            pulls.tickets_on_branch,
            repository,
            branch,
            head_repository=head_repository,
            reported_by=reported_by,
        )

    async def attempt_opened_by(self, repository: str, number: int, when: datetime) -> bool:
        """Whether the ticket had an attempt opened by `when`."""
        return await self._run(pulls.attempt_opened_by, repository, number, when)

    async def held_for(self, repository: str, subject: str) -> list[Observation]:
        """Observations held under a subject."""
        return await self._run(held.held_for, repository, subject)

    async def merged_tickets(self, repository: str) -> list[MergedTicket]:
        """Every merged ticket with its anchor."""
        return await self._run(tickets.merged_tickets, repository)


class SqlUnit(SqlReads):
    """`handlers.ports.UnitOfWork`: one write transaction."""

    def __init__(
        self,
        executor: ThreadPoolExecutor,
        connection: Connection,
        surfaces: SurfacesFor | None,
        render: Render,
        clock: Clock,
    ) -> None:
        super().__init__(executor, connection)
        self._surfaces, self._render, self._clock = surfaces, render, clock
        self.transaction: AbstractContextManager[Connection] | None = None
        self.ended = False

    async def execute(
        self,
        key: TicketKey,
        change: Change,
        context: ChangeContext,
        *,
        installation_id: int | None = None,
        expected_revision: int | None = None,
    ) -> Outcome:
        """The one door, inside this unit."""
        return await self._run(
            tickets.execute_in, key, change, context, surfaces=self._surfaces,
            expected_revision=expected_revision, installation_id=installation_id,
        )  # fmt: skip

    async def remember(self, pull: PullRequest, linked: set[int]) -> set[int]:
        """Store the PR; return what it linked before."""
        return await self._run(pulls.remember, pull, linked)

    async def hold(
        self,
        repository: str,
        subject: str,
        observation: Observation,
        now: float,
        *,
        per_subject: bool = False,
    ) -> None:
        """Keep an observation under a subject."""
        await self._run(held.hold, repository, subject, observation, now, per_subject=per_subject)

    async def record_sign_of_life(self, heard: Heard) -> bool:
        """Store a sign of life."""
        return await self._run(signs.record_sign_of_life, heard)

    async def set_installation(self, installation_id: int, account: str, status: str, now: float) -> None:
        """Record an installation's status."""
        await self._run(installations.set_installation, installation_id, account, status, now)

    async def set_repositories(
        self, installation_id: int, repositories: Iterable[str], active: bool, now: float
    ) -> None:
        """Record repositories added to or removed from an installation."""
        await self._run(installations.set_repositories, installation_id, list(repositories), active, now)

    async def send(self, *answers: Answer) -> None:
        """Enqueue the writes with this transaction; replies within the author's reply limit."""
        rendered = [self._render(answer) for answer in answers]
        await self._run(_enqueue_all, rendered, self._clock())

    async def commit(self) -> None:
        """Make every write of the unit durable now (fsynced on SQLite); the unit ends here."""
        if self.ended:
            raise RuntimeError("this unit of work has already ended")
        assert self.transaction is not None
        end = functools.partial(self.transaction.__exit__, None, None, None)
        await asyncio.get_running_loop().run_in_executor(self._executor, end)
        self.ended = True


def _enqueue_all(connection: Connection, rendered: list[Effect | Reply], now: float) -> None:
    for item in rendered:
        if isinstance(item, Reply):
            enqueue_reply(connection, item, now)
        else:
            enqueue(connection, [item], now)


class SqlStore:
    """`handlers.ports.Store` over the process's database."""

    def __init__(
        self, database: Database, *, render: Render, surfaces: SurfacesFor | None = None, clock: Clock
    ) -> None:
        self.database = database
        self._render, self._surfaces, self._clock = render, surfaces, clock
        self._threads = _Threads()

    def read(self) -> _Open[SqlReads]:
        """A read-only transaction."""
        return _Open(self, write=False)

    def unit(self) -> _Open[SqlUnit]:
        """A write transaction, kept only by `commit()`."""
        return _Open(self, write=True)

    def close(self) -> None:
        """Stop the idle threads."""
        self._threads.close()


U = TypeVar("U", bound=SqlReads)


class _Open(Generic[U]):
    """`async with store.unit() as uow:`: the transaction opens and ends on the unit's thread."""

    def __init__(self, store: SqlStore, *, write: bool) -> None:
        self._store, self._write = store, write
        self._executor: ThreadPoolExecutor | None = None
        self._transaction: AbstractContextManager[Connection] | None = None
        self._unit: SqlReads | None = None

    async def __aenter__(self) -> U:
        executor = self._executor = self._store._threads.take()
        database = self._store.database
        opened = database.write() if self._write else database.read()
        try:
            connection = await asyncio.get_running_loop().run_in_executor(executor, opened.__enter__)
        except BaseException:
            self._store._threads.give_back(executor)
            raise
        self._transaction = opened
        if self._write:
            store = self._store
            unit = SqlUnit(executor, connection, store._surfaces, store._render, store._clock)
            unit.transaction = opened
            self._unit = unit
        else:
            self._unit = SqlReads(executor, connection)
        return self._unit  # type: ignore[return-value]

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        assert self._executor is not None and self._transaction is not None
        if isinstance(self._unit, SqlUnit) and self._unit.ended:
            self._store._threads.give_back(self._executor)
            return
        # A read ends quietly; a unit that did not reach `commit()` (or whose handler failed) is undone.
        keep = kind is None and not self._write
        end = (
            functools.partial(self._transaction.__exit__, None, None, None)
            if keep
            else functools.partial(self._transaction.__exit__, _Rollback, _Rollback(), None)
        )
        try:
            await asyncio.shield(asyncio.get_running_loop().run_in_executor(self._executor, end))
        finally:
            if isinstance(self._unit, SqlUnit):
                self._unit.ended = True
            self._store._threads.give_back(self._executor)


class _Rollback(Exception):  # noqa: N818 - control flow, not an error
    """Thrown into the transaction's block to roll it back (no commit, or the handler failed)."""
