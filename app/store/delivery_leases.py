"""Which stored deliveries a worker is running now: their lease has not yet run out.

`railyard redeliver` leaves those to their worker (`app.store.queue.requeue` does not touch
them) and names them here, with when the lease runs out: a worker that died loses it then.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select

from app.store.database import Database
from app.store.delivery_status import PENDING
from app.store.queue import deliveries


def leased_now(database: Database, delivery_ids: Sequence[str], now: float) -> dict[str, float]:
    """Of `delivery_ids`, those pending under a live lease at `now`, with when it runs out."""
    if not delivery_ids:
        return {}
    statement = select(deliveries.c.delivery_id, deliveries.c.lease_until).where(
        deliveries.c.delivery_id.in_(list(delivery_ids)),
        deliveries.c.status == PENDING,
        deliveries.c.lease_until > now,
    )
    with database.read() as connection:
        return {str(row.delivery_id): float(row.lease_until) for row in connection.execute(statement)}
