"""The store as handlers see it (`handlers.ports.Store`): reads and units of work, off the event loop.

A unit of work holds one connection and one transaction for its whole life, and runs every
statement on a thread of its own: SQLite's write lock is a thread's, and the event loop that
acknowledges webhooks never waits on a lock or an fsync. The threads are kept for the next
unit. Statements are queued to the thread in order and the handler waits only for answers it
needs: a hop to a thread costs more than most statements, so a unit of plain writes costs one
wait, at commit. `commit()` makes the unit's writes durable; leaving the block without it
rolls them back, and a queued write that failed fails the commit.
"""

from __future__ import annotations

import asyncio
import queue
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from contextlib import AbstractContextManager
from datetime import datetime
from types import TracebackType
from typing import Any, Generic, TypeVar

from sqlalchemy import Connection
from sqlalchemy.exc import OperationalError

from app.contracts.effect_types import LimitedReply
from app.contracts.traces import TRACING, set_attributes, span
from app.store import agent_accounts, api_answers, held, installations, pulls, repositories, signs, tickets
from app.store.database import Database
from app.store.effects import Effect, rerun
from app.store.gate_unit import GateAnswerReads, GateAnswerWrites
from app.store.hops import Lane, off_loop
from app.store.replies import enqueue_rendered
from app.store.tickets import SurfacesFor
from handlers.answers import Answer, CheckRun
from handlers.ports import (
    Clock,
    Heard,
    KeptAnswer,
    MergedTicket,
    Outcome,
    PullAndTickets,
    PullRequest,
    RecordedEvent,
)
from policies.door import Change, ChangeContext
from policies.model import Ticket, TicketKey
from policies.rails import Observation
from policies.span_attributes import change_span, outcome_attributes
from policies.watchdog import Clocks

T = TypeVar("T")
CLOSE_WAIT = 5.0
"""Seconds `SqlStore.close` waits at most for its threads' last jobs."""
Render = Callable[[Answer], Effect | LimitedReply]
"""Turns an answer (an intent) into the effect or limited reply that writes it (`app.views.replies_text`)."""


class _Threads:
    """Threads running jobs in order (`app.store.hops.Lane`), one per open unit, reused."""

    def __init__(self) -> None:
        self._idle: queue.SimpleQueue[Lane] = queue.SimpleQueue()
        self._closed = False

    def take(self) -> Lane:
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            return Lane("railyard-unit")

    def give_back(self, lane: Lane) -> None:
        if self._closed:
            lane.close()  # the store closed while the unit ran: its thread ends after it
        else:
            self._idle.put(lane)

    def close(self, wait: float = 0.0) -> None:
        """Close the idle lanes, waiting up to `wait` seconds in all for the jobs they hold."""
        self._closed = True
        until = time.monotonic() + wait
        while True:
            try:
                self._idle.get_nowait().close(max(0.0, until - time.monotonic()))
            except queue.Empty:
                return


class _Ends:
    """A transaction that can be ended once; using it after is a bug, said at once."""

    ended = False

    def _check(self) -> None:
        if self.ended:
            raise RuntimeError("this unit of work has already ended")


class _Session(_Ends):
    """One transaction on one thread. Statements are queued to the thread in order; a caller
    waits only for an answer it needs (a read, an outcome) and at the end, so a unit of writes
    that answer nothing costs one round trip to the thread, at commit."""

    def __init__(self, lane: Lane, opened: AbstractContextManager[Connection], *, write: bool) -> None:
        self._lane, self._opened, self._write = lane, opened, write
        self._connection: Connection | None = None
        self._failed: BaseException | None = None
        self._queued = False  # whether anything was given to the thread

    def _guarded(self, job: Callable[[], T]) -> Callable[[], T]:
        self._queued = True

        def guarded() -> T:
            if self._failed is not None:
                raise self._failed  # an earlier statement failed: the transaction is lost
            try:
                if self._connection is None:
                    # Begun with the first statement, in the same trip to the thread: a
                    # trip costs more than most statements.
                    self._connection = self._opened.__enter__()
                return job()
            except BaseException as error:
                self._failed = error
                raise

        # The statement runs in the caller's context (the lane copies it): an effect it
        # enqueues is stored under the current span's traceparent.
        return guarded

    def post(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        """Queue a statement whose answer nobody waits for (a failure surfaces at the next wait)."""
        self._check()
        self._lane.post(self._guarded(lambda: function(self._connection, *args, **kwargs)))

    async def run(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Queue a statement and wait for its answer."""
        self._check()
        return await self._lane.call(self._guarded(lambda: function(self._connection, *args, **kwargs)))

    async def end(self, keep: bool) -> None:
        """Commit (`keep`) or roll back, on the thread, after everything queued before."""
        self._check()
        self.ended = True
        if not self._queued:  # every read ran on the loop (`SqlReads`): nothing began, nothing to end
            return

        def finish() -> None:
            if self._connection is not None:  # None: the transaction never began
                if keep and self._failed is None:
                    self._opened.__exit__(None, None, None)
                else:
                    self._opened.__exit__(_Rollback, _Rollback(), None)
            if keep and self._failed is not None and self._write:
                raise self._failed  # a queued write failed: nothing was kept

        if self._write:
            await asyncio.shield(self._lane.call(finish))
        else:
            self._lane.post(finish)
        # A read's end is not waited for: nothing it wrote can be lost, and the thread runs
        # whatever the next unit queues only after it (one thread, in order), so the hop back
        # is saved. A failure there is the connection's, met again by whoever uses it next.


class _HereSession(_Ends):
    """A read transaction on the caller's thread (SQLite's reads, on the event loop: see
    `Database.read_here`): each statement runs as it is asked for, with nothing to hop."""

    def __init__(self, opened: AbstractContextManager[Connection]) -> None:
        self._opened = opened
        self._connection = opened.__enter__()
        self._failed: BaseException | None = None

    def post(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        """Run a statement whose answer nobody waits for (a failure surfaces at the next wait)."""
        self._check()
        try:
            function(self._connection, *args, **kwargs)
        except Exception as error:
            self._failed = error

    async def run(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a statement and answer; a scan (`_SCANS`) on a thread, so a large repository's
        rows are never read with the event loop held (the same connection: one statement at a
        time, as always)."""
        self._check()
        if self._failed is not None:
            raise self._failed  # an earlier statement failed: the transaction is lost
        try:
            if function in _SCANS:
                return await off_loop(function, self._connection, *args, **kwargs)
            return function(self._connection, *args, **kwargs)
        except BaseException as error:
            self._failed = error
            raise

    async def end(self, keep: bool) -> None:
        """End the transaction (a read keeps nothing either way)."""
        self._check()
        self.ended = True
        if keep and self._failed is None:
            self._opened.__exit__(None, None, None)
        else:
            self._opened.__exit__(_Rollback, _Rollback(), None)


_SCANS: frozenset[Callable[..., Any]] = frozenset(
    {tickets.merged_tickets, tickets.history, tickets.delivery_cost_since, *pulls.SCANS}
)
"""Reads whose rows grow with the repository (every merged ticket or PR, every ticket showing an
open PR, a ticket's whole log, a budget's deliveries): run off the event loop even on SQLite."""


class SqlReads(GateAnswerReads):
    """`handlers.ports.Reads` over one transaction, every statement on the unit's thread (on
    SQLite, on the caller's). A read outside a unit on PostgreSQL (`here`: its statements are
    each their own transaction anyway, `Database.read`) runs the reads every command makes on
    the event loop's connections instead: no hop to a thread and back, and the driver's own
    execution: a read block of a ticket and a command count took 0.37x to 0.62x the CPU it took on
    a thread (`docs/benchmarks.md`)."""

    def __init__(self, session: _Session | _HereSession, here: Database | None = None) -> None:
        self._session: _Session | _HereSession = session
        self._here = here

    async def _run(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await self._session.run(function, *args, **kwargs)

    async def ticket(self, key: TicketKey) -> Ticket | None:
        """The ticket at its latest revision."""
        if self._here is not None:
            return await tickets.load_here(self._here, key)
        return await self._run(tickets.load, key)

    async def history(self, key: TicketKey) -> list[RecordedEvent]:
        """The ticket's event log."""
        return await self._run(tickets.history, key)

    async def delivery_cost_since(self, repository: str, actor_id: int, since: datetime) -> str:
        """The cost the account's deliveries here reported since `since` (USD, a decimal string)."""
        return await self._run(tickets.delivery_cost_since, repository, actor_id, since)

    async def commands_since(self, repository: str, actor_id: int, since: datetime) -> int:
        """Commands the account ran in the repository since `since`."""
        if self._here is not None:
            return await tickets.commands_since_here(self._here, repository, actor_id, since)
        return await self._run(tickets.commands_since, repository, actor_id, since)

    async def stored_pull(self, repository: str, number: int) -> PullAndTickets | None:
        """A PR as last seen, with its links."""
        return await self._run(pulls.stored_pull, repository, number)

    async def pulls_where(
        self, repository: str, *, head_sha: str | None = None, head_ref: str | None = None
    ) -> list[PullAndTickets]:
        """Stored PRs with this head."""
        return await self._run(pulls.pulls_where, repository, head_sha=head_sha, head_ref=head_ref)

    async def open_linked_into(self, repository: str, branch: str) -> list[PullAndTickets]:
        """Stored open PRs that link tickets and target `branch`, newest first."""
        return await self._run(pulls.open_linked_into, repository, branch)

    async def tickets_on_branch(
        self,
        repository: str,
        branch: str,
        *,
        head_in_repository: bool,
        reported_by: datetime | None = None,
    ) -> set[int]:
        """Tickets whose claim or delivery reported `branch`."""
        return await self._run(
            pulls.tickets_on_branch,
            repository,
            branch,
            head_in_repository=head_in_repository,
            reported_by=reported_by,
        )

    async def pulls_merged_as(self, repository: str, commits: Collection[str] | None) -> list[PullAndTickets]:
        """Stored merged PRs with one of these merge commits (None: every one)."""
        return await self._run(pulls.pulls_merged_as, repository, commits)

    async def attempt_opened_by(self, repository: str, number: int, when: datetime) -> bool:
        """Whether the ticket had an attempt opened by `when`."""
        return await self._run(pulls.attempt_opened_by, repository, number, when)

    async def held_for(self, repository: str, subject: str) -> list[Observation]:
        """Observations held under a subject."""
        return await self._run(held.held_for, repository, subject)

    async def merged_tickets(self, repository: str) -> list[MergedTicket]:
        """Every merged ticket with its anchor."""
        return await self._run(tickets.merged_tickets, repository)

    async def tickets_showing_pull(self, repository: str, number: int, before: datetime) -> set[int]:
        """Tickets whose rails show the PR linked and open as of before `before`."""
        return await self._run(pulls.tickets_showing_pull, repository, number, before)

    async def kept_answer(self, account_id: int, key: str) -> KeptAnswer | None:
        """The API answer kept under the account's key."""
        return await self._run(api_answers.kept_answer, account_id, key)

    async def repository_at(self, repository_id: int) -> str | None:
        """The name the repository's records are kept under."""
        return await self._run(repositories.repository_at, repository_id)

    async def repository_named(self, name: str) -> int | None:
        """The repository whose records are kept under `name`."""
        return await self._run(repositories.repository_named, name)

    async def agent_logins(self, installation_id: int, account_id: int) -> set[str]:
        """The listed logins the account acted under (`agent_accounts.logins_of`)."""
        return await self._run(agent_accounts.logins_of, installation_id, account_id)


class SqlUnit(SqlReads, GateAnswerWrites):
    """`handlers.ports.UnitOfWork`: one write transaction."""

    def __init__(self, session: _Session, surfaces: SurfacesFor | None, render: Render, clock: Clock) -> None:
        super().__init__(session)
        self._surfaces, self._render, self._clock = surfaces, render, clock

    async def execute(
        self,
        key: TicketKey,
        change: Change,
        context: ChangeContext,
        *,
        installation_id: int | None = None,
        expected_revision: int | None = None,
    ) -> Outcome:
        """The one door, inside this unit, in a `railyard.command` span (docs/traces.md)."""
        if not TRACING.on:
            return await self._run(
                tickets.execute_in, key, change, context, surfaces=self._surfaces,
                expected_revision=expected_revision, installation_id=installation_id,
            )  # fmt: skip
        with span(*change_span(key, change)):
            outcome = await self._run(
                tickets.execute_in, key, change, context, surfaces=self._surfaces,
                expected_revision=expected_revision, installation_id=installation_id,
            )  # fmt: skip
            set_attributes(outcome_attributes(outcome.refusal, outcome.applied, outcome.replayed))
            return outcome

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
        self._session.post(held.hold, repository, subject, observation, now, per_subject=per_subject)

    async def record_sign_of_life(self, heard: Heard) -> bool:
        """Store a sign of life."""
        return await self._run(signs.record_sign_of_life, heard)

    async def place_repository(
        self, repository_id: int, name: str, created_at: float | None, now: float, installation_id: int | None
    ) -> None:
        """Make `name` the repository's name, moving records as `repositories.place` does."""
        await self._run(repositories.place, repository_id, name, created_at, now, installation_id)

    async def place_repositories(self, names: Mapping[int, str], now: float) -> None:
        """GitHub's names now for several ids, placed together (`repositories.place_all`)."""
        await self._run(repositories.place_all, dict(names), now)

    async def set_installation(self, installation_id: int, account: str, status: str, now: float) -> None:
        """Record an installation's status."""
        self._session.post(installations.set_installation, installation_id, account, status, now)

    async def set_repositories(
        self, installation_id: int, repositories: Iterable[str], active: bool, now: float
    ) -> None:
        """Record repositories added to or removed from an installation."""
        self._session.post(installations.set_repositories, installation_id, list(repositories), active, now)

    async def remember_agent(self, installation_id: int, login: str, account_id: int, now: float) -> None:
        """Keep that the account acted under a listed login (`agent_accounts.remember`)."""
        self._session.post(agent_accounts.remember, installation_id, login, account_id, now)

    async def send(self, *answers: Answer) -> None:
        """Enqueue the writes with this transaction; replies within the author's reply limit."""
        rendered = [self._rendered(answer) for answer in answers]
        self._session.post(enqueue_rendered, rendered, self._clock())

    async def keep_answer(self, answer: KeptAnswer) -> KeptAnswer:
        """Keep the API answer with this transaction (or find the one a racing request kept)."""
        return await self._run(api_answers.keep_answer, answer)

    async def clocks(self, key: TicketKey, ticket: Ticket) -> Clocks:
        """The ticket's watchdog clocks as this transaction sees them."""
        return await self._run(signs.clocks, key, ticket)

    def _rendered(self, answer: Answer) -> Effect | LimitedReply:
        item = self._render(answer)
        if isinstance(answer, CheckRun) and answer.rerun and isinstance(item, Effect):
            return rerun(item)  # Re-run pressed: written even when GitHub already shows the same
        return item

    async def commit(self) -> None:
        """Make every write of the unit durable now (fsynced on SQLite); the unit ends here."""
        await self._session.end(keep=True)


def _read_once(database: Database, function: Callable[..., T], args: tuple[Any, ...]) -> T:
    with database.read() as connection:
        return function(connection, *args)


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

    async def repository_at(self, repository_id: int) -> str | None:
        """`Store.repository_at`: one primary-key read on the event loop (`Database.point_read_here`)."""
        row = await self.database.point_read_here(repositories.NAME_OF, (repository_id,))
        return None if row is None else str(row[0])

    async def read_once(self, function: Callable[..., T], *args: Any) -> T:
        """`function(connection, *args)` in a read transaction of its own, begun, run and ended in
        one hop to a thread (a `read()` block waits for each statement and for its end)."""
        if self.database.is_sqlite:
            try:
                with self.database.read_here() as connection:
                    return function(connection, *args)
            except OperationalError:  # SQLite busy past READ_HERE_BUSY_MS: wait on a thread instead
                pass
        return await off_loop(_read_once, self.database, function, args)

    def close(self) -> None:
        """Stop the idle threads, once what they were given has run (a read's end gives its
        connection back to the pool then: closed before `Database.close`, none is left out of
        it), waiting `CLOSE_WAIT` seconds at most."""
        self._threads.close(CLOSE_WAIT)


U = TypeVar("U", bound=SqlReads)


class _Open(Generic[U]):
    """`async with store.unit() as uow:`: the transaction opens and ends on the unit's thread."""

    def __init__(self, store: SqlStore, *, write: bool) -> None:
        self._store, self._write = store, write
        self._lane: Lane | None = None
        self._session: _Session | _HereSession | None = None

    async def __aenter__(self) -> U:
        database = self._store.database
        if not self._write and database.is_sqlite:
            session: _Session | _HereSession = _HereSession(database.read_here())
            self._session = session
            return SqlReads(session)  # type: ignore[return-value]
        lane = self._lane = self._store._threads.take()
        opened = database.write() if self._write else database.read()
        session = self._session = _Session(lane, opened, write=self._write)
        if self._write:
            store = self._store
            return SqlUnit(session, store._surfaces, store._render, store._clock)  # type: ignore[return-value]
        return SqlReads(session, here=database)  # type: ignore[return-value]

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        assert self._session is not None
        try:
            if not self._session.ended:
                # A read ends quietly; a unit that did not reach `commit()` (or failed) is undone.
                await self._session.end(keep=kind is None and not self._write)
        finally:
            if self._lane is not None:
                self._store._threads.give_back(self._lane)


class _Rollback(Exception):  # noqa: N818 - control flow, not an error
    """Thrown into the transaction's block to roll it back (no commit, or the handler failed)."""
