"""Signs of life of claimed attempts, for the claim watchdog.

Kept as the latest per (ticket, attempt) in `signs_of_life`, moved only forward in time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, select, update

from app.store.codec import ticket_from_data
from app.store.database import insert_for
from app.store.tables import SignOfLifeRow, table
from app.store.tickets import attempts, tickets
from handlers.ports import Heard
from policies.door import normalize_key
from policies.model import Ticket, TicketKey
from policies.states import WorkState
from policies.watchdog import Watch, silence_limit

signs_of_life = table(SignOfLifeRow)


def record_sign_of_life(connection: Connection, heard: Heard) -> bool:
    """Store the sign unless a later one is stored for the attempt; False when the issue is no ticket.

    The configuration (limit, policy version), when given, replaces the stored one.
    """
    key = normalize_key(heard.key)
    ticket_id = connection.execute(
        select(tickets.c.id).where(tickets.c.repository == key.repository, tickets.c.number == key.number)
    ).scalar_one_or_none()
    if ticket_id is None:
        return False
    _upsert(connection, int(ticket_id), heard)
    return True


def _upsert(connection: Connection, ticket_id: int, heard: Heard) -> None:
    insert = insert_for(connection)
    where = (signs_of_life.c.ticket_id == ticket_id, signs_of_life.c.attempt == heard.attempt)
    connection.execute(
        insert(signs_of_life)
        .values(
            ticket_id=ticket_id,
            attempt=heard.attempt,
            at=heard.at,
            kind=heard.kind,
            source=heard.source,
            max_silence_minutes=heard.max_silence_minutes,
            policy_version=heard.policy_version,
        )
        .on_conflict_do_nothing(index_elements=["ticket_id", "attempt"])
    )
    # Only forward in time: the condition is evaluated under the row lock, so racing writers
    # leave the latest sign, whatever order they commit in.
    connection.execute(
        update(signs_of_life)
        .where(*where, signs_of_life.c.at < heard.at)
        .values(at=heard.at, kind=heard.kind, source=heard.source)
    )
    if heard.max_silence_minutes is not None:
        connection.execute(
            update(signs_of_life)
            .where(*where)
            .values(max_silence_minutes=heard.max_silence_minutes, policy_version=heard.policy_version)
        )


@dataclass(frozen=True)
class Watched:
    """A claimed ticket whose issue is open, with its current attempt's watch."""

    ticket: Ticket
    watch: Watch
    policy_version: str
    ticket_id: int = 0


@dataclass(frozen=True)
class Unwatchable:
    """A claimed ticket whose stored rows could not be read into a watch, and why."""

    ticket: TicketKey
    ticket_id: int
    error: Exception


def watched_claims(connection: Connection, repository: str | None = None) -> list[Watched | Unwatchable]:
    """Every claimed ticket whose issue is open, with its current attempt's watch.

    A ticket whose rows cannot be read (a snapshot no longer decodes, a value out of range)
    comes back as `Unwatchable`, so one bad row never hides the others from the watchdog.
    """
    statement = select(
        tickets.c.id, tickets.c.repository, tickets.c.number, tickets.c.revision, tickets.c.snapshot
    )
    statement = statement.where(tickets.c.work == WorkState.CLAIMED.value)
    # A repository that lost its name (`owner/name@ID`, app.store.repositories) is watched by nobody:
    # its notices would have no repository to go to.
    statement = statement.where(~tickets.c.repository.contains("@"))
    if repository is not None:
        statement = statement.where(tickets.c.repository == repository.casefold())
    rows = connection.execute(statement.order_by(tickets.c.repository, tickets.c.number)).all()
    ids = [row.id for row in rows]
    opened = {
        (r.ticket_id, r.number): r.opened_at
        for r in connection.execute(
            select(attempts.c.ticket_id, attempts.c.number, attempts.c.opened_at).where(
                attempts.c.ticket_id.in_(ids)
            )
        )
    }
    signs = {
        (r.ticket_id, r.attempt): r
        for r in connection.execute(select(signs_of_life).where(signs_of_life.c.ticket_id.in_(ids)))
    }
    watched: list[Watched | Unwatchable] = []
    for row in rows:
        try:
            item = _watched(row, opened, signs)
        except Exception as error:  # one ticket's bad row: named, and the others still watched
            watched.append(Unwatchable(TicketKey(row.repository, row.number), int(row.id), error))
            continue
        if item is not None:
            watched.append(item)
    return watched


Rows = dict[tuple[int, int], Any]


def _watched(row: Any, opened: Rows, signs: Rows) -> Watched | None:
    ticket = ticket_from_data(TicketKey(row.repository, row.number), row.revision, row.snapshot)
    opened_at = opened.get((row.id, ticket.attempt))
    if ticket.closed or ticket.claimant is None or opened_at is None:
        return None
    sign = signs.get((row.id, ticket.attempt))
    limit = silence_limit(ticket.check_in_minutes, sign.max_silence_minutes if sign else None)
    watch = Watch(ticket.attempt, ticket.claimant, opened_at, sign.at if sign else None, limit)
    return Watched(ticket, watch, (sign.policy_version if sign else None) or "", int(row.id))


@dataclass(frozen=True)
class Rechecked:
    """An accepted ticket the hourly round judges again: where, and through which installation."""

    ticket: TicketKey
    ticket_id: int
    installation_id: int | None


def accepted_with_open_pulls(connection: Connection) -> list[Rechecked]:
    """Every accepted ticket with an open PR that links it (its acceptance can still gate a merge)."""
    statement = select(
        tickets.c.id, tickets.c.repository, tickets.c.number, tickets.c.installation_id, tickets.c.snapshot
    ).where(tickets.c.work == WorkState.ACCEPTED.value, ~tickets.c.repository.contains("@"))
    found: list[Rechecked] = []
    for row in connection.execute(statement.order_by(tickets.c.repository, tickets.c.number)):
        pulls = ((row.snapshot or {}).get("rails") or {}).get("pull_requests") or []
        if any(isinstance(p, dict) and p.get("open") and p.get("linked") for p in pulls):
            key = TicketKey(row.repository, row.number)
            found.append(Rechecked(key, int(row.id), row.installation_id))
    return found
