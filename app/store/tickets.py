"""The one door through which every handler changes a ticket, and the ticket's reads.

`execute_in(connection, key, change, context)` loads the ticket, lets the core decide, and
appends the events, the attempts and delivery records they imply, and the operation's
outcome, in the caller's transaction, only if the ticket's revision is still the one it
read (optimistic concurrency; a conflict is retried from a savepoint). An operation id seen
before returns the stored outcome and writes nothing. The door's pure parts (which decision a
change gets, its operation's name) are `policies.door`'s.

`TicketService` is the same door in a transaction of its own: a synchronous façade kept for
the watchdog, the command line, the pages' reads and scripts (`app.bootstrap.wire` builds the
one a process uses). Handlers never see it: they go through the unit of work (`unit.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, bindparam, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from app.contracts.effect_types import LimitedReply
from app.store.attempt_rows import attempt_id_of, open_attempt, record_delivery
from app.store.codec import audit_event, event_from_row, ticket_from_data, ticket_to_data
from app.store.compiled import MANY_ROWS
from app.store.database import Database
from app.store.effects import Effect, enqueue
from app.store.hops import off_loop
from app.store.operation_rows import own_operation_id, refusals, repository_of, stored_outcome
from app.store.queue_heads import queued_checks
from app.store.replies import enqueue_reply
from app.store.repositories import repository_named
from app.store.tables import OperationRow, TicketEventRow, TicketRow, table
from handlers.ports import MergedTicket, Outcome, RecordedEvent
from policies import audit
from policies.commands import Context
from policies.deployment_facts import newest_containing
from policies.door import OPENS_ATTEMPT, Change, ChangeContext, change_name, decide_change, normalize_key
from policies.engine import apply_all
from policies.events import Event, EventType
from policies.evidence import total_cost
from policies.model import Ticket, TicketKey
from policies.refusals import Refusal, RefusalCode, stale_revision

EffectsFor = Callable[[Outcome], Sequence[Effect | LimitedReply]]
SurfacesFor = Callable[[int, Ticket], Sequence[Effect]]
"""The writes that show a ticket (status comment, check-runs), given its installation and state."""
MAX_CONFLICT_RETRIES = 20
_SAVEPOINT = "railyard_door"

tickets = table(TicketRow)
events_table = table(TicketEventRow)
operations = table(OperationRow)

SNAPSHOT_REVISION = "revision"
"""The revision a snapshot was written at, kept in it: `audit verify` then names a row whose last
events were deleted and whose revision was lowered to match, even when their folds changed no field
(a `deployment_gated`, a close and its reopen). Snapshots written before it was kept have none."""

# Statements are built once: building them per call costs more than the fsync.
_SELECT_OPERATION = select(operations).where(operations.c.operation_id == bindparam("b_operation"))
_SELECT_TICKET = select(tickets.c.id, tickets.c.revision, tickets.c.snapshot).where(
    tickets.c.repository == bindparam("b_repository"), tickets.c.number == bindparam("b_number")
)
_UPDATE_TICKET = update(tickets).where(
    tickets.c.id == bindparam("b_id"), tickets.c.revision == bindparam("b_revision")
)
_TICKET_HEARD_FROM = update(tickets).where(
    tickets.c.repository == bindparam("b_repository"), tickets.c.number == bindparam("b_number")
)
_TICKET_INSTALLATION = select(tickets.c.installation_id).where(
    tickets.c.repository == bindparam("b_repository"), tickets.c.number == bindparam("b_number")
)
_HISTORY = (
    select(events_table)
    .join(tickets, tickets.c.id == events_table.c.ticket_id)
    .where(tickets.c.repository == bindparam("b_repository"), tickets.c.number == bindparam("b_number"))
    .order_by(events_table.c.revision)
)
_COMMANDS_SINCE = (
    select(func.count())
    .select_from(operations)
    .where(
        operations.c.repository == bindparam("b_repository"),
        operations.c.actor_id == bindparam("b_actor"),
        operations.c.at >= bindparam("b_since"),
        operations.c.change.like("/%"),
    )
)
# The door's read also takes the digest of the ticket's latest event (the next one chains from
# it) in the same statement: no extra round trip, and the same snapshot as the revision.
_LATEST_DIGEST = (
    select(events_table.c.digest)
    .where(events_table.c.ticket_id == tickets.c.id, events_table.c.revision == tickets.c.revision)
    .scalar_subquery()
)
_SELECT_TICKET_TO_WRITE = select(
    tickets.c.id,
    tickets.c.revision,
    tickets.c.snapshot,
    tickets.c.repository_id,
    _LATEST_DIGEST.label("digest"),
).where(tickets.c.repository == bindparam("b_repository"), tickets.c.number == bindparam("b_number"))


class _ConflictError(Exception):
    """Another writer moved the ticket between our read and our write."""


def execute_in(
    connection: Connection,
    key: TicketKey,
    change: Change,
    context: ChangeContext,
    *,
    surfaces: SurfacesFor | None,
    expected_revision: int | None = None,
    installation_id: int | None = None,
) -> Outcome:
    """Apply a command, an observation or a notice to a ticket, at most once per operation id.

    The status comment and check-runs that show a changed ticket are enqueued with it
    (through `installation_id`, or the installation that last brought news of the ticket).
    """
    key = normalize_key(key)
    for _ in range(MAX_CONFLICT_RETRIES):
        try:
            # A savepoint: a conflict or a duplicate undoes this try only, not the caller's unit.
            with _undone_if_it_fails(connection):
                outcome = _execute_once(connection, key, change, context, expected_revision, installation_id)
                if outcome.shown is not None:  # an applied change wrote the installation with its row
                    at, applied = context.at.timestamp(), outcome.applied
                    _show(connection, outcome.shown, installation_id, at, surfaces, remembered=applied)
                return outcome
        except _ConflictError:
            # Read again: with an expected revision the next try finds the ticket moved and
            # refuses it as stale (stored, for a command), like any other stale change.
            continue
        except IntegrityError:
            # A concurrent writer created the ticket or stored this operation first:
            # read again; the stored operation (if any) is then replayed.
            continue
    raise RuntimeError(f"{key}: gave up after {MAX_CONFLICT_RETRIES} write conflicts")


@contextmanager
def _undone_if_it_fails(connection: Connection) -> Iterator[None]:
    """A savepoint around the block: what it wrote is undone if it raises, and the caller's
    transaction goes on. Written out rather than `connection.begin_nested()`, which compiles its
    savepoint's statement on every use (the name is numbered, so SQLAlchemy caches none): 0.19
    to 0.24 ms of CPU a command against 0.09 to 0.11 for the same two statements as text
    (`docs/benchmarks.md`). The name may repeat: a nested one hides the outer until released."""
    connection.exec_driver_sql(f"SAVEPOINT {_SAVEPOINT}")
    try:
        yield
    except BaseException:
        # A connection SQLAlchemy let go (the server gone, or a statement interrupted) has no
        # savepoint left to go back to: the error that ended it is the one to raise, as
        # `begin_nested` would (the worker retries a lost connection; Ctrl-C stays Ctrl-C).
        if not connection.invalidated:
            connection.exec_driver_sql(f"ROLLBACK TO SAVEPOINT {_SAVEPOINT}")
        raise
    connection.exec_driver_sql(f"RELEASE SAVEPOINT {_SAVEPOINT}")


def load(connection: Connection, key: TicketKey) -> Ticket | None:
    """The ticket as of its latest revision, or None when the issue is not a ticket."""
    key = normalize_key(key)
    row = connection.execute(_SELECT_TICKET, _key_params(key)).first()
    return ticket_from_data(key, row.revision, row.snapshot) if row else None


async def load_here(database: Database, key: TicketKey) -> Ticket | None:
    """`load` outside a transaction, on PostgreSQL's event-loop connections (`select_here`)."""
    key = normalize_key(key)
    rows = await database.select_here(_SELECT_TICKET, _key_params(key))
    return ticket_from_data(key, rows[0].revision, rows[0].snapshot) if rows else None  # type: ignore[attr-defined]


def history(connection: Connection, key: TicketKey) -> list[RecordedEvent]:
    """The ticket's event log, oldest first."""
    key = normalize_key(key)
    rows = connection.execute(_HISTORY, _key_params(key)).mappings()
    return [RecordedEvent(row["revision"], event_from_row(dict(row))) for row in rows]


async def history_here(database: Database, key: TicketKey) -> list[RecordedEvent]:
    """`history` outside a transaction, on PostgreSQL's event-loop connections."""
    rows = await database.select_here(_HISTORY, _key_params(normalize_key(key)))
    return _recorded(rows) if len(rows) <= MANY_ROWS else await off_loop(_recorded, rows)


def _recorded(rows: list[Any]) -> list[RecordedEvent]:
    return [RecordedEvent(row.revision, event_from_row(row._asdict())) for row in rows]


def commands_since(connection: Connection, repository: str, actor_id: int, since: datetime) -> int:
    """How many commands the account `actor_id` ran in `repository` since `since`."""
    parameters = {"b_repository": repository.casefold(), "b_actor": actor_id, "b_since": since}
    return int(connection.execute(_COMMANDS_SINCE, parameters).scalar_one())


async def commands_since_here(database: Database, repository: str, actor_id: int, since: datetime) -> int:
    """`commands_since` outside a transaction, on PostgreSQL's event-loop connections."""
    parameters = {"b_repository": repository.casefold(), "b_actor": actor_id, "b_since": since}
    [(count,)] = await database.select_here(_COMMANDS_SINCE, parameters)
    return int(count)


def delivery_cost_since(connection: Connection, repository: str, actor_id: int, since: datetime) -> str:
    """The cost the account `actor_id`'s deliveries in `repository` reported since `since` (USD)."""
    rows = connection.execute(
        select(events_table.c.data)
        .select_from(events_table.join(tickets, events_table.c.ticket_id == tickets.c.id))
        .where(
            tickets.c.repository == repository.casefold(),
            events_table.c.type == EventType.DELIVERED.value,
            events_table.c.actor_id == actor_id,
            events_table.c.at >= since,
        )
    )
    costs = ((row.data or {}).get("evidence") or {} for row in rows)
    return format(total_cost(cost.get("cost_usd") for cost in costs), "f")


def merged_tickets(connection: Connection, repository: str) -> list[MergedTicket]:
    """Every merged ticket, with the sha of the newest deployment known to contain its merge."""
    rows = connection.execute(
        select(tickets.c.number, tickets.c.revision, tickets.c.snapshot).where(
            tickets.c.repository == repository.casefold(), tickets.c.integration == "merged"
        )
    )
    found = []
    for row in rows:
        rails = ticket_from_data(TicketKey(repository, row.number), row.revision, row.snapshot).rails
        if rails.merge_commit:
            newest = newest_containing(rails.deployment_facts.values(), rails.merge_commits)
            found.append(MergedTicket(int(row.number), rails.merge_commit, newest, rails.merge_commits))
    return found


class TicketService:
    """The one door and the ticket reads, each in a transaction of its own."""

    def __init__(self, database: Database, surfaces: SurfacesFor | None = None) -> None:
        self.database = database
        self.surfaces = surfaces

    def execute(
        self,
        key: TicketKey,
        change: Change,
        context: ChangeContext,
        *,
        expected_revision: int | None = None,
        effects: EffectsFor | None = None,
        installation_id: int | None = None,
    ) -> Outcome:
        """`execute_in` in a transaction of its own; `effects(outcome)` names the GitHub writes the
        outcome calls for, enqueued in the same transaction (so they exist exactly when the change does)."""
        with self.database.write() as connection:
            outcome = execute_in(
                connection, key, change, context, surfaces=self.surfaces,
                expected_revision=expected_revision, installation_id=installation_id,
            )  # fmt: skip
            if effects is not None and outcome.answerable:
                _enqueue_answers(connection, effects(outcome), context.at.timestamp())
            return outcome

    def load(self, key: TicketKey) -> Ticket | None:
        """The ticket as of its latest revision, or None when the issue is not a ticket."""
        with self.database.read() as connection:
            return load(connection, key)

    def history(self, key: TicketKey) -> list[RecordedEvent]:
        """The ticket's event log, oldest first."""
        with self.database.read() as connection:
            return history(connection, key)

    def commands_since(self, repository: str, actor_id: int, since: datetime) -> int:
        """How many commands the account `actor_id` ran in `repository` since `since`."""
        with self.database.read() as connection:
            return commands_since(connection, repository, actor_id, since)

    def refusals(self, key: TicketKey) -> list[dict[str, Any]]:
        """Refused commands on the ticket (issue), oldest first: the `command_rejected` audit."""
        key = normalize_key(key)
        with self.database.read() as connection:
            return refusals(connection, key)


def _show(
    connection: Connection,
    ticket: Ticket,
    installation_id: int | None,
    now: float,
    surfaces: SurfacesFor | None,
    *,
    remembered: bool = False,
) -> None:
    """Remember the installation (unless the ticket's write just did); enqueue the writes that
    show the ticket's new state."""
    where = _key_params(ticket.key)
    if installation_id is None:
        installation_id = connection.execute(_TICKET_INSTALLATION, where).scalar()
    elif not remembered:
        connection.execute(_TICKET_HEARD_FROM, {**where, "installation_id": installation_id})
    if surfaces is not None and installation_id is not None:
        queued = queued_checks(connection, installation_id, ticket)
        enqueue(connection, [*surfaces(installation_id, ticket), *queued], now)


def _execute_once(
    connection: Connection,
    key: TicketKey,
    change: Change,
    context: ChangeContext,
    expected_revision: int | None,
    installation_id: int | None = None,
) -> Outcome:
    stored = connection.execute(_SELECT_OPERATION, {"b_operation": context.operation_id}).first()
    row = connection.execute(_SELECT_TICKET_TO_WRITE, _key_params(key)).first()
    if stored is not None:
        own_id = own_operation_id(connection, key, row, stored)
        if own_id is None:
            return stored_outcome(connection, stored, key, row)
        # Another ticket's: this ticket's operation is kept under an id of its own.
        context = replace(context, operation_id=own_id)
        stored = connection.execute(_SELECT_OPERATION, {"b_operation": own_id}).first()
        if stored is not None:
            return stored_outcome(connection, stored)
    ticket = ticket_from_data(key, row.revision, row.snapshot) if row else Ticket(key)
    if expected_revision is not None and ticket.revision != expected_revision:
        final = isinstance(context, Context)
        stale = stale_revision(str(key), expected_revision, ticket.revision, final=final)
        if final:  # a command's stale refusal is its outcome: replayed, never applied later
            _record_operation(connection, key, row, change, context, ticket.revision, refusal=stale)
        return Outcome(context.operation_id, key, ticket.revision, refusal=stale)
    decision = decide_change(ticket, change, context)
    if isinstance(decision, Refusal):
        # Only commands have an outcome worth replaying; observations are deduplicated by the rails.
        if not decision.transient and isinstance(context, Context):
            _record_operation(connection, key, row, change, context, ticket.revision, refusal=decision)
        # A broken config file is shown on the status comment until it is fixed.
        shown = ticket if decision.code is RefusalCode.CONFIG_ERROR and ticket.exists else None
        return Outcome(context.operation_id, key, ticket.revision, refusal=decision, shown=shown)
    if not decision:
        return Outcome(context.operation_id, key, ticket.revision)
    after = apply_all(ticket, decision)
    ticket_id = _save_ticket(connection, row.id if row else None, ticket, after, context, installation_id)
    _append(connection, ticket_id, ticket, decision, row.digest if row else None)
    _record_operation(connection, key, row, change, context, after.revision, ticket.revision + 1, ticket_id)
    return Outcome(context.operation_id, key, after.revision, events=decision, shown=after)


def _enqueue_answers(connection: Connection, answers: Sequence[Effect | LimitedReply], now: float) -> None:
    """Effects as they are; replies to a person only while the person has replies left."""
    for answer in answers:
        if isinstance(answer, LimitedReply):
            enqueue_reply(connection, answer, now)
        else:
            enqueue(connection, [answer], now)


def _key_params(key: TicketKey) -> dict[str, Any]:
    return {"b_repository": key.repository, "b_number": key.number}


def _save_ticket(
    connection: Connection,
    ticket_id: int | None,
    before: Ticket,
    after: Ticket,
    context: ChangeContext,
    installation_id: int | None = None,
) -> int:
    """Write the ticket's row at its new revision, with the installation that brought the news
    when known (`_show` then need not write it again)."""
    values: dict[str, Any] = {
        "revision": after.revision,
        "work": after.work.value if after.work else None,
        "integration": after.rails.integration.value,
        "deployment": after.rails.deployment.value,
        "snapshot": {**ticket_to_data(after), SNAPSHOT_REVISION: after.revision},
        "updated_at": context.at,
    }
    if installation_id is not None:
        values["installation_id"] = installation_id
    if ticket_id is None:
        created = connection.execute(
            insert(tickets),
            {
                "repository": after.key.repository,
                "repository_id": repository_named(connection, after.key.repository),
                "number": after.key.number,
                "created_at": context.at,
                **values,
            },
        )
        new_id = created.inserted_primary_key
        assert new_id is not None
        return int(new_id[0])
    moved = connection.execute(_UPDATE_TICKET, {"b_id": ticket_id, "b_revision": before.revision, **values})
    if moved.rowcount != 1:
        raise _ConflictError
    return ticket_id


def _append(
    connection: Connection, ticket_id: int, before: Ticket, events: Sequence[Event], latest_digest: str | None
) -> None:
    """Append the events, each chained to the one before it (the first to `latest_digest`, the
    digest of the event at `before.revision`), and the attempts and delivery records they imply.

    The ticket's row was moved first (`_save_ticket`): a concurrent writer of the same ticket
    fails its revision check and reads again, so no two events ever chain from one digest.
    """
    attempt_ids: dict[int, int] = {}
    attempt = before.attempt
    # None only after an event written by a process older than 0016: verify names that one.
    previous = audit.seed(ticket_id) if before.revision == 0 else latest_digest or ""
    for offset, event in enumerate(events, start=1):
        row = {
            "ticket_id": ticket_id,
            "revision": before.revision + offset,
            "type": event.type.value,
            "actor": event.actor,
            "actor_id": event.actor_id,
            "role": event.role,
            "at": event.at,
            "operation_id": event.operation_id,
            "policy_version": event.policy_version,
            "data": dict(event.data),
        }
        previous = audit.chain(previous, audit_event(row))
        connection.execute(insert(events_table), {**row, "digest": previous})
        if event.type in OPENS_ATTEMPT and event.data["attempt"] > attempt:
            attempt = event.data["attempt"]
            attempt_ids[attempt] = open_attempt(connection, ticket_id, before, event)
        if event.type is EventType.DELIVERED:
            attempt_id = attempt_ids.get(event.data["attempt"]) or attempt_id_of(
                connection, ticket_id, event.data["attempt"]
            )
            record_delivery(connection, ticket_id, attempt_id, event)


def _actor(context: ChangeContext) -> tuple[str, int | None]:
    if isinstance(context, Context):
        return context.actor.login, context.actor.id
    return context.actor, context.actor_id


def _record_operation(
    connection: Connection,
    key: TicketKey,
    row: Any,
    change: Change,
    context: ChangeContext,
    revision: int,
    first_revision: int | None = None,
    ticket_id: int | None = None,
    refusal: Refusal | None = None,
) -> None:
    """The operation's outcome, replayed when the same operation id comes again: on the ticket's
    row `row` as read (`ticket_id`: the row an applied change wrote), with GitHub's id of the
    repository (the row's, or the name's holder: `repository_of`)."""
    connection.execute(
        insert(operations),
        {
            "operation_id": context.operation_id,
            "repository": key.repository,
            "number": key.number,
            "ticket_id": ticket_id if ticket_id is not None else row.id if row is not None else None,
            "repository_id": repository_of(connection, key, row),
            "change": change_name(change),
            "actor": _actor(context)[0],
            "actor_id": _actor(context)[1],
            "outcome": "refused" if refusal else "applied",
            "revision": revision,
            "first_revision": first_revision,
            "refusal_code": refusal.code.value if refusal else None,
            "refusal_reason": refusal.reason if refusal else None,
            "refusal_hint": refusal.hint if refusal else None,
            "policy_version": context.policy_version,
            "at": context.at,
        },
    )
