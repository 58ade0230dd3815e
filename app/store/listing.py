"""The release owner's reads: tickets a page at a time, and a period's events for the report.

A page is ONE statement: the `tickets` rows (each carries the snapshot the one door writes in
the same transaction as its events, so nothing is folded from the log) in newest-activity
order, walked along an index already in that order (migration 0011), with three correlated
look-ups per row for `policies.attention.RecordFacts`: the ticket's latest `claim_overdue`,
its latest stored sign of life, the repository's latest command refusal, and the ticket's latest
`review_overdue`. The count is a
second, optional statement.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, and_, case, func, or_, select

from app.store.codec import ticket_from_data
from app.store.database import Database
from app.store.signs import signs_of_life
from app.store.tickets import events_table, operations, tickets
from policies.attention import OverdueRecord, RecordFacts
from policies.events import EventType
from policies.model import Ticket, TicketKey
from policies.refusals import RefusalCode
from policies.report_figures import REPORT_EVENT_TYPES, LoggedEvent, Report, report
from policies.states import WorkState

MAX_PAGE = 500


@dataclass(frozen=True)
class Cursor:
    """Where a keyset page ends: the last row's activity time and id (pages go older)."""

    updated_at: datetime
    id: int

    def token(self) -> str:
        """An opaque, URL-safe text for `parse`."""
        raw = f"{self.updated_at.isoformat()}|{self.id}".encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @classmethod
    def parse(cls, token: str) -> Cursor:
        """The cursor `token` names; ValueError for anything else."""
        try:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
            when, _, ident = raw.rpartition("|")
            moment = datetime.fromisoformat(when)
            if moment.tzinfo is None:
                raise ValueError("naive time")
            moment = moment.astimezone(UTC)  # a time at the calendar's edge overflows here, not in a query
            row_id = int(ident)
            if not 0 < row_id < 2**63:  # a row id fits a 64-bit integer, on SQLite and PostgreSQL
                raise ValueError("row id out of range")
            return cls(moment, row_id)
        except (ValueError, UnicodeDecodeError, OverflowError) as error:
            raise ValueError(f"not a page cursor: {token!r}") from error


@dataclass(frozen=True)
class Listed:
    """One ticket of a page: its state, when it was created and last moved, and its record facts."""

    ticket: Ticket
    created_at: datetime
    updated_at: datetime
    facts: RecordFacts
    row_id: int


@dataclass(frozen=True)
class Page:
    """One page of tickets, the total when asked for, and the cursor of the next page."""

    items: list[Listed]
    total: int | None
    next: Cursor | None


def _filters(repository: str | None, work: Sequence[WorkState] | None) -> list[ColumnElement[bool]]:
    where: list[ColumnElement[bool]] = [tickets.c.work.is_not(None)]
    if repository is not None:
        where.append(tickets.c.repository == repository.casefold())
    if work is not None:
        where.append(tickets.c.work.in_([state.value for state in work]))
    return where


def _page_statement(where: list[ColumnElement[bool]], limit: int, offset: int, after: Cursor | None) -> Any:
    # The latest attempt's `claim_overdue`, its passed deadline before any later silence: a
    # deadline stays overdue whatever signs of life follow (`policies.attention.claim_overdue`).
    data = events_table.c.data
    overdue = (
        select(events_table.c.revision)
        .where(events_table.c.ticket_id == tickets.c.id, events_table.c.type == EventType.CLAIM_OVERDUE.value)
        .order_by(
            func.coalesce(data["attempt"].as_integer(), 0).desc(),
            case((data["reason"].as_string() == "deadline", 1), else_=0).desc(),
            events_table.c.revision.desc(),
        )
        .limit(1)
        .correlate(tickets)
        .scalar_subquery()
    )
    sign = (
        select(func.max(signs_of_life.c.at))
        .where(signs_of_life.c.ticket_id == tickets.c.id)
        .correlate(tickets)
        .scalar_subquery()
    )
    refusal = (
        select(func.coalesce(operations.c.refusal_code, ""))
        .where(
            operations.c.repository == tickets.c.repository,
            operations.c.change.like("/%"),
            # A stale revision is refused before the configuration is looked at: no evidence.
            func.coalesce(operations.c.refusal_code, "") != RefusalCode.STALE_REVISION.value,
        )
        .order_by(operations.c.at.desc(), operations.c.operation_id.desc())
        .limit(1)
        .correlate(tickets)
        .scalar_subquery()
    )
    review_overdue = (
        select(events_table.c.operation_id)
        .where(
            events_table.c.ticket_id == tickets.c.id, events_table.c.type == EventType.REVIEW_OVERDUE.value
        )
        .order_by(events_table.c.revision.desc())
        .limit(1)
        .correlate(tickets)
        .scalar_subquery()
    )
    if after is not None:
        where = [
            *where,
            or_(
                tickets.c.updated_at < after.updated_at,
                and_(tickets.c.updated_at == after.updated_at, tickets.c.id < after.id),
            ),
        ]
    return (
        select(
            tickets.c.id,
            tickets.c.repository,
            tickets.c.number,
            tickets.c.revision,
            tickets.c.snapshot,
            tickets.c.created_at,
            tickets.c.updated_at,
            sign.label("last_sign"),
            refusal.label("last_refusal"),
            review_overdue.label("review_overdue"),
            events_table.c.data.label("overdue_data"),
            events_table.c.at.label("overdue_at"),
        )
        .select_from(tickets)
        .outerjoin(
            events_table, and_(events_table.c.ticket_id == tickets.c.id, events_table.c.revision == overdue)
        )
        .where(*where)
        .order_by(tickets.c.updated_at.desc(), tickets.c.id.desc())
        .limit(limit)
        .offset(offset)
    )


def _listed(row: Any) -> Listed:
    ticket = ticket_from_data(TicketKey(row.repository, row.number), row.revision, row.snapshot)
    overdue = None
    if row.overdue_data is not None:
        data = row.overdue_data
        since = data.get("silent_since")
        overdue = OverdueRecord(
            attempt=int(data.get("attempt", 0)),
            silent_since=datetime.fromisoformat(since) if since else None,
            limit_minutes=data.get("limit_minutes"),
            at=row.overdue_at,
            reason=str(data.get("reason") or "silence"),
        )
    facts = RecordFacts(
        overdue, row.last_sign, row.last_refusal == RefusalCode.CONFIG_ERROR.value, row.review_overdue
    )
    return Listed(ticket, row.created_at, row.updated_at, facts, int(row.id))


def list_tickets(
    connection: Connection,
    *,
    repository: str | None = None,
    work: Sequence[WorkState] | None = None,
    limit: int = 50,
    offset: int = 0,
    after: Cursor | None = None,
    count: bool = False,
) -> Page:
    """One page of tickets, newest activity first: of `repository` (or all), in `work` states (or any).

    Page by `offset` or by `after` (the previous page's `next`, steady while tickets move);
    `count` adds the total matching the filters (a second statement).
    """
    if not 1 <= limit <= MAX_PAGE or offset < 0:
        raise ValueError(f"limit must be 1..{MAX_PAGE} and offset at least 0")
    where = _filters(repository, work)
    items = [_listed(row) for row in connection.execute(_page_statement(where, limit, offset, after))]
    total = None
    if count:
        total = int(connection.execute(select(func.count()).select_from(tickets).where(*where)).scalar_one())
    last = items[-1] if len(items) == limit else None
    return Page(items, total, Cursor(last.updated_at, last.row_id) if last else None)


def repositories(connection: Connection) -> list[tuple[str, int]]:
    """Every repository with tickets, and how many, by name."""
    rows = connection.execute(
        select(tickets.c.repository, func.count())
        .where(tickets.c.work.is_not(None))
        .group_by(tickets.c.repository)
        .order_by(tickets.c.repository)
    )
    return [(str(row[0]), int(row[1])) for row in rows]


class Listing:
    """The listing reads, each in a read transaction of its own."""

    def __init__(self, database: Database) -> None:
        self.database = database

    def page(self, **filters: Any) -> Page:
        """`list_tickets` with these arguments."""
        with self.database.read() as connection:
            return list_tickets(connection, **filters)

    def every(
        self, repository: str | None = None, work: Sequence[WorkState] | None = None, size: int = MAX_PAGE
    ) -> Iterator[Listed]:
        """Every matching ticket, newest activity first, a keyset page per read."""
        after: Cursor | None = None
        while True:
            page = self.page(repository=repository, work=work, limit=size, after=after)
            yield from page.items
            if page.next is None:
                return
            after = page.next

    def repositories(self) -> list[tuple[str, int]]:
        """Every repository with tickets, and how many."""
        with self.database.read() as connection:
            return repositories(connection)

    def report(
        self, repository: str | None = None, since: datetime | None = None, until: datetime | None = None
    ) -> Report:
        """The report of `since <= at < until` (`policies.report_figures`), accounts by current login."""
        with self.database.read() as connection:
            events = period_events(connection, repository, since, until)
            ids = sorted({e.actor_id for e in events if e.actor_id is not None})
            logins = current_logins(connection, ids)
        return report(events, since, until, logins)


def period_events(
    connection: Connection, repository: str | None, since: datetime | None, until: datetime | None
) -> list[LoggedEvent]:
    """The report's events (`REPORT_EVENT_TYPES`) of every ticket of `repository` (or all) with one
    in `since <= at < until`: all of that ticket's before `until`, so an acceptance in the period
    finds the delivery and the attempt before it. In ticket and revision order."""
    window: list[ColumnElement[bool]] = [events_table.c.type.in_([t.value for t in REPORT_EVENT_TYPES])]
    if since is not None:
        window.append(events_table.c.at >= since)
    if until is not None:
        window.append(events_table.c.at < until)
    active = select(events_table.c.ticket_id).where(*window).distinct()
    where: list[ColumnElement[bool]] = [
        events_table.c.ticket_id.in_(active),
        events_table.c.type.in_([t.value for t in REPORT_EVENT_TYPES]),
    ]
    if until is not None:
        where.append(events_table.c.at < until)
    if repository is not None:
        where.append(tickets.c.repository == repository.casefold())
    rows = connection.execute(
        select(
            tickets.c.repository,
            tickets.c.number,
            events_table.c.revision,
            events_table.c.type,
            events_table.c.actor,
            events_table.c.actor_id,
            events_table.c.at,
            events_table.c.data,
        )
        .join(tickets, tickets.c.id == events_table.c.ticket_id)
        .where(*where)
        .order_by(tickets.c.repository, tickets.c.number, events_table.c.revision)
    )
    return [
        LoggedEvent(
            f"{row.repository}#{row.number}",
            int(row.revision),
            EventType(row.type),
            row.actor,
            row.actor_id,
            row.at,
            row.data,
        )
        for row in rows
    ]


def current_logins(connection: Connection, account_ids: Sequence[int]) -> dict[int, str]:
    """The login each account used in its newest recorded event (a renamed account's current name)."""
    if not account_ids:
        return {}
    newest = (
        select(events_table.c.actor_id, func.max(events_table.c.id).label("last"))
        .where(events_table.c.actor_id.in_(list(account_ids)))
        .group_by(events_table.c.actor_id)
        .subquery()
    )
    rows = connection.execute(
        select(events_table.c.actor_id, events_table.c.actor).join(newest, events_table.c.id == newest.c.last)
    )
    return {int(row.actor_id): str(row.actor) for row in rows}
