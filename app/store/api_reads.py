"""What one API call about a ticket needs from the database, asked at once in one transaction.

An API read runs on every agent's poll, and a hop to the database's thread costs more than
the statements, so everything is asked in one: whose records the name holds (SPEC: a reused
name shows nothing of the old repository's tickets), the ticket, and its watchdog clocks for a
read or the answer kept under the Idempotency-Key for a command.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import Connection

from app.store.api_answers import kept_answer
from app.store.repositories import repository_at, repository_named
from app.store.signs import clocks
from app.store.tickets import load
from handlers.ports import KeptAnswer
from policies.model import Ticket, TicketKey
from policies.watchdog import Clocks


@dataclass(frozen=True)
class ServedTicket:
    """The records under a ticket's repository name, as one API read sees them."""

    holder: int | None
    """GitHub's id of the repository whose records the name holds (None: no id holds it)."""
    known_as: str | None
    """When no id holds the name: the name the asked id's records are kept under, if any."""
    ticket: Ticket | None = None
    """The ticket, read only when the name's records are the asked repository's."""
    clocks: Clocks = field(default_factory=Clocks)
    """Read for an API read of an existing ticket only."""
    kept: KeptAnswer | None = None
    """For a command: the answer kept under its account and Idempotency-Key, if any."""


def served_ticket(
    connection: Connection, key: TicketKey, repository_id: int, command: tuple[int, str] | None = None
) -> ServedTicket:
    """The name's holder and, when it is `repository_id`, the ticket and either its clocks (a read)
    or the answer kept for `command`, (account id, Idempotency-Key)."""
    holder = repository_named(connection, key.repository)
    if holder != repository_id:
        return ServedTicket(holder, repository_at(connection, repository_id) if holder is None else None)
    ticket = load(connection, key)
    if command is not None:
        return ServedTicket(holder, None, ticket, kept=kept_answer(connection, *command))
    if ticket is None or not ticket.exists:
        return ServedTicket(holder, None, ticket)
    return ServedTicket(holder, None, ticket, clocks(connection, key, ticket))
