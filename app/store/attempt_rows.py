"""The rows an event implies beside it in the ticket's log (`app.store.tickets._append`): the
attempt a claim or a send-back opens, and the delivery record of a delivery, each written in the
door's transaction."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, bindparam, insert, select

from app.store.tables import AttemptRow, DeliveryRecordRow, table
from policies.events import Event, EventType
from policies.model import Ticket

attempts = table(AttemptRow)
delivery_records = table(DeliveryRecordRow)

_SELECT_ATTEMPT = select(attempts.c.id).where(
    attempts.c.ticket_id == bindparam("b_ticket"), attempts.c.number == bindparam("b_number")
)


def open_attempt(connection: Connection, ticket_id: int, before: Ticket, event: Event) -> int:
    """Store the attempt `event` opens (a claim, a send-back); its row's id."""
    if event.type is EventType.SENT_BACK:
        runner, runner_id = event.data["runner"], event.data.get("runner_id")
    else:
        runner, runner_id = event.actor, event.actor_id
    result = connection.execute(
        insert(attempts),
        {
            "ticket_id": ticket_id,
            "number": event.data["attempt"],
            "runner": runner,
            "runner_id": runner_id,
            "opened_by": event.type.value,
            "check_in_minutes": event.data.get("check_in_minutes", before.check_in_minutes),
            "branch": event.data.get("branch", before.attempt_branch),
            "operation_id": event.operation_id,
            "opened_at": event.at,
        },
    )
    key = result.inserted_primary_key
    assert key is not None
    return int(key[0])


def attempt_id_of(connection: Connection, ticket_id: int, number: int) -> int:
    """The id of the ticket's attempt `number`."""
    return int(connection.execute(_SELECT_ATTEMPT, {"b_ticket": ticket_id, "b_number": number}).scalar_one())


def record_delivery(connection: Connection, ticket_id: int, attempt_id: int, event: Event) -> None:
    """Store the delivery record a `delivered` event implies, under its attempt."""
    data = event.data
    comment_at = data["comment_at"]
    connection.execute(
        insert(delivery_records),
        {
            "ticket_id": ticket_id,
            "attempt_id": attempt_id,
            "attempt": data["attempt"],
            "runner": event.actor,
            "runner_id": event.actor_id,
            "summary": data["summary"],
            "branch": data["branch"],
            "commit_sha": data["commit"],
            "pull_request": data["pull_request"],
            "artifacts": list(data["artifacts"]),
            "comment_id": data["comment_id"],
            "comment_at": _parse(comment_at),
            "operation_id": event.operation_id,
            "policy_version": event.policy_version,
            "created_at": event.at,
        },
    )


def _parse(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None
