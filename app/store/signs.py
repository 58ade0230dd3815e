"""Signs of life of claimed attempts, and the limits each attempt is watched by, for the watchdog.

Kept as the latest per (ticket, attempt) in `signs_of_life`, moved only forward in time, with
the configuration read for the attempt: its silence limit, deadline and review wait.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from sqlalchemy import Column, Connection, Select, bindparam, case, select, type_coerce
from sqlalchemy.types import NullType

from app.store.attempt_rows import attempts
from app.store.codec import ticket_from_data
from app.store.database import Database, dialect_insert
from app.store.hops import off_loop
from app.store.tables import SignOfLifeRow, table
from app.store.tickets import history, history_here, load, load_here, tickets
from handlers.ports import Heard, RecordedEvent
from policies.door import normalize_key
from policies.model import Ticket, TicketKey
from policies.states import WorkState
from policies.watchdog import Clocks, ReviewWait, Watch, review_wait_hours, silence_limit

signs_of_life = table(SignOfLifeRow)


def record_sign_of_life(connection: Connection, heard: Heard) -> bool:
    """Store the sign unless a later one is stored for the attempt; False when the issue is no ticket.

    The configuration (limit, policy version), when given, replaces the stored one.
    """
    key = normalize_key(heard.key)
    values = {"attempt": heard.attempt, "at": heard.at, "kind": heard.kind, "source": heard.source}
    configuration = _configuration(heard)
    statement = _upsert_sign(connection.dialect.name, tuple(configuration))
    where = {"b_repository": key.repository, "b_number": key.number}
    stored = connection.execute(
        statement, {**where, **{f"b_{k}": v for k, v in {**values, **configuration}.items()}}
    )
    return bool(stored.rowcount)


# One statement a sign, built once per dialect and kind (a command records a sign, and
# building it costs more CPU than running it: `docs/benchmarks.md`): the ticket's id read, and
# the sign inserted, or moved forward when the attempt has one (the dialect's own ON CONFLICT).
# The sign moves only forward in time: the condition is evaluated under the row's lock (SET
# reads the stored row), so racing writers leave the latest sign, whatever order they commit
# in. The configuration, when the sign carries one, replaces the stored one whatever its time.
_MOVES = ("at", "kind", "source")
_CONFIGURED = ("max_silence_minutes", "policy_version", "max_attempt_hours", "max_review_wait_hours")


@functools.cache
def _upsert_sign(dialect: str, configuration: tuple[str, ...]) -> Any:
    """INSERT ... SELECT the ticket's id ... ON CONFLICT: one round trip where a read, an insert
    and one or two updates took three or four; no row when the issue is no ticket."""
    given = ("attempt", *_MOVES, *configuration)
    ticket = select(
        tickets.c.id, *(bindparam(f"b_{name}", type_=signs_of_life.c[name].type) for name in given)
    )
    ticket = ticket.where(
        tickets.c.repository == bindparam("b_repository"), tickets.c.number == bindparam("b_number")
    )
    insert = dialect_insert(dialect)(signs_of_life).from_select(["ticket_id", *given], ticket)
    later = signs_of_life.c.at < insert.excluded.at
    moved: dict[str, Any] = {
        name: case((later, insert.excluded[name]), else_=signs_of_life.c[name]) for name in _MOVES
    }
    if configuration == _CONFIGURED:
        moved.update({name: insert.excluded[name] for name in _CONFIGURED})
    upsert = insert.on_conflict_do_update(index_elements=["ticket_id", "attempt"], set_=moved)
    return upsert.execution_options(preserve_rowcount=True)  # SQLAlchemy counts INSERTs' rows only when asked


def _configuration(heard: Heard) -> dict[str, Any]:
    """The limits `heard` carries as stored (a review wait `null` in the file is kept as 0)."""
    if heard.max_silence_minutes is None:
        return {"max_silence_minutes": None, "policy_version": heard.policy_version}
    return {
        "max_silence_minutes": heard.max_silence_minutes,
        "policy_version": heard.policy_version,
        "max_attempt_hours": heard.max_attempt_hours,
        "max_review_wait_hours": heard.max_review_wait_hours or 0,
    }


@dataclass(frozen=True)
class Watched:
    """A claimed ticket whose issue is open, with its current attempt's watch."""

    ticket: Ticket
    watch: Watch
    policy_version: str
    ticket_id: int = 0


@dataclass(frozen=True)
class Unwatchable:
    """A ticket whose stored rows could not be read (into a watch, or for its re-check), and why."""

    ticket: TicketKey
    ticket_id: int
    error: Exception


def watched_claims(connection: Connection, repository: str | None = None) -> list[Watched | Unwatchable]:
    """Every claimed ticket whose issue is open, with its current attempt's watch.

    A ticket whose rows cannot be read (a snapshot no longer decodes, a time that is not one)
    comes back as `Unwatchable`, so one bad row never hides the others from the watchdog: each
    ticket's values are converted on their own (`_Lenient`), not by the reads of every ticket.
    """
    # A repository that lost its name (`owner/name@ID`, app.store.repositories) is watched by nobody:
    # its notices would have no repository to go to.
    rows, snapshot = _rows(connection, WorkState.CLAIMED, repository)
    ids = [row.id for row in rows]
    when = _Lenient(connection, [attempts.c.opened_at])
    opened = {
        (r.ticket_id, r.number): r
        for r in connection.execute(
            select(attempts.c.ticket_id, attempts.c.number, *when.selected).where(
                attempts.c.ticket_id.in_(ids)
            )
        )
    }
    signs = _Signs(connection, ids)
    watched: list[Watched | Unwatchable] = []
    for row in rows:
        try:
            ticket = ticket_from_data(TicketKey(row.repository, row.number), row.revision, snapshot(row))
            found = opened.get((row.id, ticket.attempt))
            opened_at = when.row(found).opened_at if found is not None else None
            if ticket.closed or ticket.claimant is None or opened_at is None:
                continue
            sign = signs.of(row.id, ticket.attempt)
            item = Watched(
                ticket, _watch(ticket, ticket.claimant, opened_at, sign), _version(sign), int(row.id)
            )
        except Exception as error:  # one ticket's bad row: named, and the others still watched
            watched.append(Unwatchable(TicketKey(row.repository, row.number), int(row.id), error))
            continue
        watched.append(item)
    return watched


class _Lenient:
    """Columns read as the driver gives them and converted one row at a time (`row`), so a value
    that no longer converts (a hand-edited row) fails the ticket it belongs to, not the read of
    every ticket."""

    def __init__(self, connection: Connection, columns: Iterable[Column[Any]]) -> None:
        columns = list(columns)
        self.selected = [type_coerce(column, NullType()).label(column.name) for column in columns]
        self._convert: list[tuple[str, Callable[[Any], Any] | None]] = [
            (
                column.name,
                column.type.dialect_impl(connection.dialect).result_processor(connection.dialect, None),
            )
            for column in columns
        ]

    def row(self, raw: Sequence[Any]) -> SimpleNamespace:
        """The row's values converted as the columns' types convert them (raises for a bad one)."""
        offset = len(raw) - len(self._convert)  # the plain columns selected before these
        return SimpleNamespace(
            **{name: convert(raw[offset + i]) if convert else raw[offset + i]
               for i, (name, convert) in enumerate(self._convert)}
        )  # fmt: skip


class _Signs:
    """The signs of life of the tickets `ids`, each converted when its ticket asks for it."""

    def __init__(self, connection: Connection, ids: list[int]) -> None:
        self._columns = _Lenient(connection, signs_of_life.c)
        statement = select(signs_of_life.c.ticket_id, signs_of_life.c.attempt, *self._columns.selected)
        self._raw = {
            (r[0], r[1]): r for r in connection.execute(statement.where(signs_of_life.c.ticket_id.in_(ids)))
        }

    def of(self, ticket_id: int, attempt: int) -> SimpleNamespace | None:
        raw = self._raw.get((ticket_id, attempt))
        return self._columns.row(raw) if raw is not None else None


def _watch(ticket: Ticket, claimant: str, opened_at: Any, sign: Any) -> Watch:
    limit = silence_limit(ticket.check_in_minutes, sign.max_silence_minutes if sign else None)
    hours = sign.max_attempt_hours if sign else None
    return Watch(ticket.attempt, claimant, opened_at, sign.at if sign else None, limit, hours)


def _version(sign: Any) -> str:
    return (sign.policy_version if sign else None) or ""


def _review_wait(ticket: Ticket, sign: Any) -> ReviewWait | None:
    """The current delivery's wait for a decision, when it is delivered and its wait is watched."""
    delivery = ticket.last_delivery
    if ticket.work is not WorkState.DELIVERED or ticket.closed or delivery is None:
        return None
    hours = review_wait_hours(sign.max_review_wait_hours if sign else None)
    if hours is None:
        return None
    return ReviewWait(delivery.attempt, delivery.runner, delivery.at, hours, delivery.operation_id)


@dataclass(frozen=True)
class Waiting:
    """A delivered ticket whose issue is open, with its delivery's wait for a decision."""

    ticket: Ticket
    wait: ReviewWait
    policy_version: str
    ticket_id: int = 0


def watched_deliveries(connection: Connection, repository: str | None = None) -> list[Waiting | Unwatchable]:
    """Every delivered ticket whose issue is open and whose wait for review is watched.

    As `watched_claims`, a ticket whose rows cannot be read comes back as `Unwatchable`.
    """
    rows, snapshot = _rows(connection, WorkState.DELIVERED, repository)
    signs = _Signs(connection, [row.id for row in rows])
    found: list[Waiting | Unwatchable] = []
    for row in rows:
        try:
            ticket = ticket_from_data(TicketKey(row.repository, row.number), row.revision, snapshot(row))
            sign = signs.of(row.id, ticket.attempt)
            wait = _review_wait(ticket, sign)
            if wait is not None:
                found.append(Waiting(ticket, wait, _version(sign), int(row.id)))
        except Exception as error:  # one ticket's bad row: named, and the others still watched
            found.append(Unwatchable(TicketKey(row.repository, row.number), int(row.id), error))
    return found


def _rows(
    connection: Connection, work: WorkState, repository: str | None
) -> tuple[list[Any], Callable[[Any], Any]]:
    """The tickets in `work` (their snapshots unread) and how to read one's snapshot."""
    snapshot = _Lenient(connection, [tickets.c.snapshot])
    statement = select(
        tickets.c.id, tickets.c.repository, tickets.c.number, tickets.c.revision, *snapshot.selected
    ).where(tickets.c.work == work.value, ~tickets.c.repository.contains("@"))
    if repository is not None:
        statement = statement.where(tickets.c.repository == repository.casefold())
    rows = list(connection.execute(statement.order_by(tickets.c.repository, tickets.c.number)).all())
    return rows, lambda row: snapshot.row(row).snapshot


_TICKET_ID = select(tickets.c.id).where(
    tickets.c.repository == bindparam("b_repository"), tickets.c.number == bindparam("b_number")
)
_SIGN = select(signs_of_life).where(
    signs_of_life.c.ticket_id == bindparam("b_ticket"), signs_of_life.c.attempt == bindparam("b_attempt")
)
_OPENED_AT = select(attempts.c.opened_at).where(
    attempts.c.ticket_id == bindparam("b_ticket"), attempts.c.number == bindparam("b_attempt")
)


ClockSteps = Generator[tuple[Select[Any], dict[str, Any]], Sequence[Any], Clocks]
"""The reads `clocks` makes, one statement at a time, each answered with its rows by the caller:
through a transaction's connection (`clocks`) or the event loop's (`clocks_here`)."""


def _clock_steps(key: TicketKey, ticket: Ticket) -> ClockSteps:
    if ticket.attempt == 0 or ticket.closed or ticket.work not in (WorkState.CLAIMED, WorkState.DELIVERED):
        return Clocks()
    key = normalize_key(key)
    found = yield _TICKET_ID, {"b_repository": key.repository, "b_number": key.number}
    if not found:
        return Clocks()
    at = {"b_ticket": found[0].id, "b_attempt": ticket.attempt}
    signs = yield _SIGN, at
    sign = signs[0] if signs else None
    if ticket.work is WorkState.DELIVERED:
        return Clocks(review=_review_wait(ticket, sign))
    opened = yield _OPENED_AT, at
    if not opened or ticket.claimant is None:
        return Clocks()
    return Clocks(watch=_watch(ticket, ticket.claimant, opened[0].opened_at, sign))


def clocks(connection: Connection, key: TicketKey, ticket: Ticket) -> Clocks:
    """The ticket's clocks as the watchdog would judge them now (empty when it is not watched)."""
    steps = _clock_steps(key, ticket)
    try:
        statement, parameters = next(steps)
        while True:
            statement, parameters = steps.send(connection.execute(statement, parameters).all())
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


async def clocks_here(database: Database, key: TicketKey, ticket: Ticket) -> Clocks:
    """`clocks` outside a transaction, on PostgreSQL's event-loop connections."""
    steps = _clock_steps(key, ticket)
    try:
        statement, parameters = next(steps)
        while True:
            statement, parameters = steps.send(await database.select_here(statement, parameters))
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Rechecked:
    """An accepted ticket the hourly round judges again: where, and through which installation."""

    ticket: TicketKey
    ticket_id: int
    installation_id: int | None


def accepted_with_open_pulls(connection: Connection) -> list[Rechecked | Unwatchable]:
    """Every accepted ticket with an open PR that links it (its acceptance can still gate a merge).

    A ticket whose snapshot no longer reads (not JSON, or not the object it was) comes back as
    `Unwatchable`: the snapshots are read in bulk and converted one ticket at a time, so one bad
    row never keeps every other acceptance from its re-check."""
    snapshot = _Lenient(connection, [tickets.c.snapshot])
    statement = select(
        tickets.c.id, tickets.c.repository, tickets.c.number, tickets.c.installation_id, *snapshot.selected
    ).where(tickets.c.work == WorkState.ACCEPTED.value, ~tickets.c.repository.contains("@"))
    found: list[Rechecked | Unwatchable] = []
    for row in connection.execute(statement.order_by(tickets.c.repository, tickets.c.number)):
        key = TicketKey(row.repository, row.number)
        try:
            pulls = ((snapshot.row(row).snapshot or {}).get("rails") or {}).get("pull_requests") or []
            linked = any(isinstance(p, dict) and p.get("open") and p.get("linked") for p in pulls)
        except Exception as error:  # one ticket's bad row: named, and the others still judged
            found.append(Unwatchable(key, int(row.id), error))
            continue
        if linked:
            found.append(Rechecked(key, int(row.id), row.installation_id))
    return found


def read_shown(database: Database, key: TicketKey) -> tuple[Ticket | None, list[RecordedEvent], Clocks]:
    """What a status comment shows of a ticket, in one read transaction: the ticket, its event
    log and its clocks (no log or clocks when it is no ticket)."""
    with database.read() as connection:
        ticket = load(connection, key)
        if ticket is None or not ticket.exists:
            return ticket, [], Clocks()
        return ticket, history(connection, key), clocks(connection, key, ticket)


async def read_shown_now(
    database: Database, key: TicketKey
) -> tuple[Ticket | None, list[RecordedEvent], Clocks]:
    """`read_shown` for the event loop: on SQLite on a thread (`read_shown`), on PostgreSQL on
    the loop's own connections (`read_shown_here`)."""
    if database.is_sqlite:
        return await off_loop(read_shown, database, key)
    return await read_shown_here(database, key)


async def read_shown_here(
    database: Database, key: TicketKey
) -> tuple[Ticket | None, list[RecordedEvent], Clocks]:
    """`read_shown` on PostgreSQL's event-loop connections: no thread, and the driver's own
    execution. Each statement is its own snapshot, as `read()` takes them there anyway."""
    ticket = await load_here(database, key)
    if ticket is None or not ticket.exists:
        return ticket, [], Clocks()
    return ticket, await history_here(database, key), await clocks_here(database, key, ticket)


def read_clocks(database: Database, ticket: Ticket) -> Clocks:
    """`clocks` in a read transaction of its own."""
    with database.read() as connection:
        return clocks(connection, ticket.key, ticket)
