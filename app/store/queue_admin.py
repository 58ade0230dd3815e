"""What an operator does with the queue (`railyard deliveries`, `railyard redeliver`, `railyard
retry-waiting`): list the stored deliveries, queue some again, make the waiting ones due now."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import bindparam, or_, select, update

from app.store.database import Database
from app.store.delivery_keys import key_by_id
from app.store.delivery_status import PENDING, REJECTED
from app.store.tables import WebhookDeliveryRow, table

deliveries = table(WebhookDeliveryRow)


def list_deliveries(database: Database, status: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
    """The newest stored deliveries, optionally of one status."""
    statement = select(
        deliveries.c.delivery_id,
        deliveries.c.event,
        deliveries.c.action,
        deliveries.c.status,
        deliveries.c.attempts,
        deliveries.c.repository,
        deliveries.c.received_at,
        deliveries.c.processed_at,
        deliveries.c.last_error,
    ).order_by(deliveries.c.seq.desc())
    if status is not None:
        statement = statement.where(deliveries.c.status == status)
    with database.read() as connection:
        return [dict(row) for row in connection.execute(statement.limit(limit)).mappings()]


def requeue(database: Database, delivery_ids: Sequence[str], now: float) -> list[str]:
    """Process stored deliveries again (after a failure, or after an outage); returns those queued.

    Re-running is safe: every state change is keyed by its operation id. A delivery rejected
    at the door (its payload is not of its event) is never processed, so it is not found. One a
    worker is running now (its lease not yet run out) is left to it: queued again it would run
    twice at once (`app.store.delivery_leases` says which those were).
    """
    found: list[str] = []
    with database.write() as connection:
        for delivery_id in delivery_ids:
            result = connection.execute(
                update(deliveries)
                .where(
                    deliveries.c.delivery_id == bindparam("b_id"),
                    deliveries.c.payload.is_not(None),
                    deliveries.c.status != REJECTED,
                    or_(deliveries.c.lease_until.is_(None), deliveries.c.lease_until <= now),
                )
                .values(status=PENDING, next_attempt_at=now, lease_until=None, lease_owner=None, attempts=0),
                {"b_id": delivery_id},
            )
            if result.rowcount:
                key_by_id(connection, delivery_id)
                found.append(delivery_id)
    return found


def retry_waiting(database: Database, now: float) -> list[str]:
    """Make every delivery waiting for its next try due now (once an outage is over); their ids.

    Only deliveries a failed try put back are moved: the tries already counted stay counted, and
    one that a worker holds (its lease not yet run out) is left to it.
    """
    with database.write() as connection:
        rows = connection.execute(
            update(deliveries)
            .where(
                deliveries.c.status == PENDING,
                deliveries.c.next_attempt_at > now,
                deliveries.c.lease_until.is_(None),
                deliveries.c.attempts > 0,
            )
            .values(next_attempt_at=now)
            .returning(deliveries.c.delivery_id)
        )
        return [str(row.delivery_id) for row in rows]
