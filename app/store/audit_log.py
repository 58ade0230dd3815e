"""The audit chain's reads (SPEC *Audit log*): recompute every ticket's chain and replay its
events against its stored row, and stream the log.

Both read one query's rows as they come (`yield_per`: a server-side cursor on PostgreSQL), so
a log of any size is checked or exported without holding it in memory: verify keeps one
ticket's replay at a time. The digests are written by the one door (`tickets._append`) and,
for events from before, by migration 0016.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from itertools import groupby
from typing import Any

from sqlalchemy import Select, String, case, cast, or_, select

from app.store.codec import audit_event, event_from_row, ticket_from_data, ticket_to_data
from app.store.database import Database
from app.store.tickets import SNAPSHOT_REVISION, events_table, tickets
from policies import audit
from policies.fold import apply
from policies.model import Ticket, TicketKey

PAGE = 500


@dataclass(frozen=True)
class Verified:
    """What `verify` found: how many events it checked, and the first break (None: every chain
    holds and every ticket's row is what its events replay to).

    A chain's break names its revision; a row's break names the ticket's revision and what
    differs (`differs`: the snapshot's fields, `rails.NAME` for a rail's, and the `work`,
    `integration` or `deployment` column as `column work`).
    """

    events: int
    tickets: int
    broken_ticket: TicketKey | None = None
    broken_revision: int | None = None
    differs: tuple[str, ...] = ()


def verify(database: Database, repository: str | None = None) -> Verified:
    """Recompute every ticket's chain (of `repository` only, when given), ticket by ticket, and
    replay its events against the row railyard decides from (snapshot, revision, state columns)."""
    # The snapshot comes on the ticket's last event's row only (or its one row without events):
    # a long log does not carry, nor decode, the same snapshot once per event.
    last = or_(events_table.c.revision == tickets.c.revision, events_table.c.revision.is_(None))
    query = (
        select(
            tickets.c.id.label("ticket_id"), tickets.c.repository.label("repository"),
            tickets.c.number.label("number"), tickets.c.revision.label("ticket_revision"),
            tickets.c.work.label("ticket_work"), tickets.c.integration.label("ticket_integration"),
            tickets.c.deployment.label("ticket_deployment"),
            case((last, tickets.c.snapshot), else_=None).label("ticket_snapshot"),
            *_event_columns(stored_text=database.is_sqlite),
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
            first, rows = _peeked(group)
            key = TicketKey(first["repository"], first["number"])
            replay = _Replay(key, rows)
            broken = audit.first_break(ticket_id, replay, first["ticket_revision"])
            checked += replay.count
            if broken is not None:
                return Verified(checked, seen, key, broken)
            differs = replay.differences()
            if differs:
                return Verified(checked, seen, key, first["ticket_revision"], differs)
    return Verified(checked, seen)


def export(
    database: Database, repository: str | None = None, since: datetime | None = None
) -> Iterator[dict[str, Any]]:
    """Every event (of `repository`, at or after `since`), ticket by ticket in revision order."""
    query: Select[Any] = (
        select(
            tickets.c.id.label("ticket_id"),
            tickets.c.repository,
            tickets.c.number,
            *_event_columns(stored_text=database.is_sqlite),
        )
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
                "at": _exported_time(row["at"]),
                "digest": row["digest"],
                "data": audit.normal(data),
            }


def _exported_time(at: datetime | str) -> str:
    """An event's time as the export writes it: UTC text; on SQLite, a stored text that is no time
    at all is written as it is stored (its row's digest then fails, as `verify` says)."""
    if isinstance(at, str):
        parsed = _stored_time(at)
        return audit.utc_text(parsed) if parsed is not None else at
    return audit.utc_text(at)


def _event_columns(stored_text: bool = False) -> list[Any]:
    """The event columns the chain reads; `stored_text`: `at` as SQLite stores it (text, read by
    `_Replay`), so a row edited into no time at all is named, not a failed read of the column."""
    columns = events_table.c
    at = cast(columns.at, String).label("at") if stored_text else columns.at
    return [
        columns.revision, columns.type, columns.actor, columns.actor_id, columns.role, at,
        columns.operation_id, columns.policy_version, columns.data, columns.digest,
    ]  # fmt: skip


def _peeked(rows: Iterator[Any]) -> tuple[Any, Iterator[Any]]:
    """The first of `rows`, and every row, the first included."""
    first = next(rows)
    return first, _with_first(first, rows)


def _with_first(first: Any, rest: Iterator[Any]) -> Iterator[Any]:
    yield first
    yield from rest


_WRITTEN_AT = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}")
"""How a time is stored on SQLite when railyard writes it (UTC, to the microsecond)."""
_NO_TIME = datetime(1970, 1, 1, tzinfo=UTC)
"""What the replay folds for a stored time that is no time (its row is a break whatever it reads)."""


def _stored_time(text: str) -> datetime | None:
    """A stored time's text as the column type reads it (UTC); None when it is no time UTC holds."""
    try:
        at = datetime.fromisoformat(text)
        return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)
    except (ValueError, OverflowError):
        return None


class _Replay:
    """A ticket's rows as the chain's events, each folded into the ticket as it is handed out
    (`policies.fold.apply`, as the one door does), counted; the row's snapshot kept when it comes."""

    def __init__(self, key: TicketKey, rows: Iterator[Any]) -> None:
        self.rows, self.count = rows, 0
        self.ticket = Ticket(key)
        self.row: Any = None
        self.unreadable: int | None = None

    def __iter__(self) -> Iterator[audit.AuditedEvent]:
        for row in self.rows:
            if row["ticket_snapshot"] is not None:
                self.row = row
            if row["revision"] is None:
                continue
            self.count += 1
            written = True
            if isinstance(row["at"], str):  # SQLite's stored text, read as it is (`_event_columns`)
                # A time not spelled as railyard writes it, even the same instant in another offset,
                # keeps a digest that covers the instant, but not SQLite's comparisons of the text
                # (`export --since`, a month's cost); and text that is no time cannot be read at all.
                # Either is a break at its row, never a crash.
                at = _stored_time(row["at"])
                written = at is not None and _WRITTEN_AT.fullmatch(row["at"]) is not None
                row = {**row, "at": at or _NO_TIME}
            if self.unreadable is None:
                self._fold(row)
            event = audit_event(row)
            yield event if written else replace(event, digest=None)

    def _fold(self, row: Any) -> None:
        try:
            self.ticket = apply(self.ticket, event_from_row(row))
        except Exception:
            # Data the fold cannot read (a type or a field it does not know, not even an object):
            # no stored ticket can be what the events replay to, and the chain may still hold.
            self.unreadable = row["revision"]

    def differences(self) -> tuple[str, ...]:
        """What of the stored row differs from the ticket its events replay to (once the chain
        held: the replay then stands at the row's revision)."""
        row, replayed = self.row, self.ticket
        if self.unreadable is not None:
            return (f"event {self.unreadable}, which does not replay",)
        if row is None:
            return ("snapshot",)
        key, revision = replayed.key, row["ticket_revision"]
        # Both through the codec and JSON: a snapshot written before a field existed reads as
        # its default, and a time or a tuple compares as a value, not as the text it was stored as.
        try:
            stored = ticket_from_data(key, revision, row["ticket_snapshot"])
        except (KeyError, TypeError, ValueError, AttributeError):  # an edited row: named, not a crash
            return ("snapshot, which cannot be read",)
        rebuilt = ticket_from_data(key, revision, json.loads(json.dumps(ticket_to_data(replayed))))
        snapshot = row["ticket_snapshot"]
        kept = snapshot.get(SNAPSHOT_REVISION) if isinstance(snapshot, dict) else None
        # Last events deleted and the row's revision lowered: the snapshot was written later.
        outran = ("snapshot's revision",) if kept is not None and kept != revision else ()
        columns = {
            "work": replayed.work.value if replayed.work else None,
            "integration": replayed.rails.integration.value,
            "deployment": replayed.rails.deployment.value,
        }
        drifted = tuple(f"column {name}" for name, value in columns.items() if row[f"ticket_{name}"] != value)
        return audit.ticket_differences(stored, rebuilt) + drifted + outran
