"""The audit chain's reads (SPEC *Audit log*): recompute every ticket's chain, and stream the log.

Both read one query's rows as they come (`yield_per`: a server-side cursor on PostgreSQL), so
a log of any size is checked or exported without holding it in memory. The digests are
written by the one door (`tickets._append`) and, for events from before, by migration 0016.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from itertools import groupby
from typing import Any

from sqlalchemy import Select, select

from app.store.codec import audit_event
from app.store.database import Database
from app.store.tickets import events_table, tickets
from policies import audit
from policies.model import TicketKey

PAGE = 500


@dataclass(frozen=True)
class Verified:
    """What `verify` found: how many events it checked, and the first break (None: every chain holds)."""

    events: int
    tickets: int
    broken_ticket: TicketKey | None = None
    broken_revision: int | None = None


def verify(database: Database, repository: str | None = None) -> Verified:
    """Recompute every ticket's chain (of `repository` only, when given), ticket by ticket."""
    query = (
        select(
            tickets.c.id.label("ticket_id"), tickets.c.repository.label("repository"),
            tickets.c.number.label("number"), tickets.c.revision.label("ticket_revision"),
            *_event_columns(),
        )
        .select_from(tickets.outerjoin(events_table, events_table.c.ticket_id == tickets.c.id))
        .order_by(tickets.c.id, events_table.c.revision)
    )  # fmt: skip
    if repository is not None:
        query = query.where(tickets.c.repository == repository.casefold())
    checked = seen = 0
    # The result is closed however the loop ends: a break found early leaves no server-side
    # cursor for the garbage collector (psycopg warns of one it has to close).
    with (
        database.read(streamed=True) as connection,
        connection.execute(query.execution_options(yield_per=PAGE)) as result,
    ):
        for ticket_id, group in groupby(result.mappings(), key=lambda row: row["ticket_id"]):
            seen += 1
            first = next(group)
            events = (audit_event(row) for row in _with_first(first, group) if row["revision"] is not None)
            counted = _Counted(events)
            broken = audit.first_break(ticket_id, counted, first["ticket_revision"])
            checked += counted.count
            if broken is not None:
                key = TicketKey(first["repository"], first["number"])
                return Verified(checked, seen, key, broken)
    return Verified(checked, seen)


def export(
    database: Database, repository: str | None = None, since: datetime | None = None
) -> Iterator[dict[str, Any]]:
    """Every event (of `repository`, at or after `since`), ticket by ticket in revision order."""
    query: Select[Any] = (
        select(tickets.c.id.label("ticket_id"), tickets.c.repository, tickets.c.number, *_event_columns())
        .select_from(events_table.join(tickets, tickets.c.id == events_table.c.ticket_id))
        .order_by(tickets.c.id, events_table.c.revision)
    )
    if repository is not None:
        query = query.where(tickets.c.repository == repository.casefold())
    if since is not None:
        query = query.where(events_table.c.at >= since)
    with (
        database.read(streamed=True) as connection,
        connection.execute(query.execution_options(yield_per=PAGE)) as result,
    ):
        for row in result.mappings():
            data = row["data"]
            yield {
                "ticket": str(TicketKey(row["repository"], row["number"])),
                "ticket_id": row["ticket_id"],
                "revision": row["revision"],
                "type": row["type"],
                "actor": row["actor"],
                "actor_id": row["actor_id"],
                "role": row["role"],
                "via": data.get("via") if isinstance(data, dict) else None,
                "operation_id": row["operation_id"],
                "policy_version": row["policy_version"],
                "at": audit.utc_text(row["at"]),
                "digest": row["digest"],
                "data": audit.normal(data),
            }


def _event_columns() -> list[Any]:
    columns = events_table.c
    return [
        columns.revision, columns.type, columns.actor, columns.actor_id, columns.role, columns.at,
        columns.operation_id, columns.policy_version, columns.data, columns.digest,
    ]  # fmt: skip


def _with_first(first: Any, rest: Iterator[Any]) -> Iterator[Any]:
    yield first
    yield from rest


class _Counted:
    """An iterator that counts what it hands out."""

    def __init__(self, items: Iterator[audit.AuditedEvent]) -> None:
        self.items, self.count = items, 0

    def __iter__(self) -> Iterator[audit.AuditedEvent]:
        for item in self.items:
            self.count += 1
            yield item
