"""The operations' rows as the one door reads them (`tickets.execute_in`): whose a stored
operation is, and its outcome replayed; and a ticket's refused commands, as its log shows them."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, bindparam, or_, select

from app.store.codec import event_from_row
from app.store.repositories import repository_named
from app.store.tables import OperationRow, TicketEventRow, TicketRow, table
from handlers.ports import Outcome
from policies.door import same_ticket, spells_no_repository
from policies.model import TicketKey
from policies.refusals import Refusal, RefusalCode

events_table = table(TicketEventRow)
operations = table(OperationRow)
tickets = table(TicketRow)
_TICKET_REPOSITORY_ID = select(tickets.c.repository_id).where(
    tickets.c.repository == bindparam("b_repository"), tickets.c.number == bindparam("b_number")
)


def own_operation_id(connection: Connection, key: TicketKey, row: Any, op: Any) -> str | None:
    """None when the stored operation `op` is the ticket at `key`'s (a replay); else the id this
    ticket's operation of the same id is kept under: the id qualified with the repository's GitHub id.

    Some operation ids spell the repository's name (`ticket-label:acme/app#12`), and a name can
    be renamed away and reused by another repository: its #12 is another ticket (another row),
    whose operation must neither replay the first one's outcome nor collide with its row. No
    GitHub name holds an `@` (`repositories.retired_name`), so the qualified id is no name's.
    A refusal stored before the ticket existed (no ticket id) is taken as this ticket's; so is
    an operation on a name whose repository railyard never identified (no rename can have moved
    its tickets). An operation stored for another key (an API key raced onto another ticket)
    replays as it always did: only the same key on another ticket is a reused name. An API
    request's id names no repository (`spells_no_repository`): on another ticket it is the key
    reused, its outcome replayed as `elsewhere` (422), never applied again."""
    if op.ticket_id is None or (row is not None and op.ticket_id == row.id):
        return None
    if spells_no_repository(op.operation_id):
        return None
    if op.repository.casefold() != key.repository.casefold() or op.number != key.number:
        return None
    repository_id = repository_of(connection, key, row)
    return None if repository_id is None else f"{op.operation_id}@{repository_id}"


def repository_of(connection: Connection, key: TicketKey, row: Any) -> int | None:
    """GitHub's id of the repository of the ticket at `key` (its row `row`, if it has one): the
    row's, else the id the records give the name now; None if railyard never identified it."""
    repository_id = row.repository_id if row is not None else None
    return repository_named(connection, key.repository) if repository_id is None else int(repository_id)


def stored_outcome(connection: Connection, op: Any, key: TicketKey | None = None, row: Any = None) -> Outcome:
    """The outcome stored for the operation `op` (a row of `operations`), replayed; `elsewhere`
    when it is not the ticket at `key` (its row `row`)'s: an API key sent again for another ticket
    after its kept answer was pruned, whose caller must not be told of that ticket's outcome."""
    operation_id = op.operation_id
    stored_key = TicketKey(op.repository, op.number)
    elsewhere = key is not None and not _same_ticket(connection, op, key, row)
    if op.outcome == "refused":
        refusal = Refusal(RefusalCode(op.refusal_code), op.refusal_reason or "", op.refusal_hint or "")
        return Outcome(
            operation_id, stored_key, op.revision, refusal=refusal, replayed=True, elsewhere=elsewhere
        )
    rows = connection.execute(
        select(events_table)
        .where(events_table.c.ticket_id == op.ticket_id, events_table.c.operation_id == operation_id)
        .order_by(events_table.c.revision)
    ).mappings()
    events = tuple(event_from_row(dict(row)) for row in rows)
    return Outcome(operation_id, stored_key, op.revision, events=events, replayed=True, elsewhere=elsewhere)


def _same_ticket(connection: Connection, op: Any, key: TicketKey, row: Any) -> bool:
    """`policies.door.same_ticket` for the stored operation `op` and the ticket at `key` (its row
    `row`): the repository's id now is read only for a refusal stored with one before any row."""
    ticket_id = row.id if row is not None else None
    known = op.ticket_id is None and op.repository_id is not None
    repository_id = repository_of(connection, key, row) if known else None
    stored = TicketKey(op.repository, op.number)
    return same_ticket(stored, op.ticket_id, op.repository_id, key, ticket_id, repository_id)


def refusals(connection: Connection, key: TicketKey) -> list[dict[str, Any]]:
    """The refused commands on the issue at `key`, oldest first. They are its repository's by
    GitHub's id (a row keeps the name it was refused under, which a rename does not move, and a
    new repository may take); rows without an id (not known, or stored before 0029) by name."""
    row = connection.execute(
        _TICKET_REPOSITORY_ID, {"b_repository": key.repository, "b_number": key.number}
    ).first()
    repository_id = repository_of(connection, key, row)
    by_name = operations.c.repository == key.repository
    if repository_id is not None:
        by_name = or_(
            operations.c.repository_id == repository_id, by_name & operations.c.repository_id.is_(None)
        )
    rows = connection.execute(
        select(operations)
        .where(by_name, operations.c.number == key.number, operations.c.outcome == "refused")
        .order_by(operations.c.at, operations.c.operation_id)
    ).mappings()
    return [dict(row) for row in rows]
