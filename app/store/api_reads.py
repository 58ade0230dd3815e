"""What one API read of a ticket needs from the database, in one statement batch on one thread.

An API read runs on every agent's poll, so it asks everything at once: whose records the
name holds (SPEC: a reused name shows nothing of the old repository's tickets), the ticket,
and its watchdog clocks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import Connection

from app.store.repositories import repository_at, repository_named
from app.store.signs import clocks
from app.store.tickets import load
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


def served_ticket(connection: Connection, key: TicketKey, repository_id: int) -> ServedTicket:
    """The name's holder and, when it is `repository_id`, the ticket and its clocks."""
    holder = repository_named(connection, key.repository)
    if holder != repository_id:
        return ServedTicket(holder, repository_at(connection, repository_id) if holder is None else None)
    ticket = load(connection, key)
    if ticket is None or not ticket.exists:
        return ServedTicket(holder, None, ticket)
    return ServedTicket(holder, None, ticket, clocks(connection, key, ticket))
