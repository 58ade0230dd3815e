"""A delivery stored before deliveries kept their repository's id (migration 0026) is keyed by
the repository's name; queued again (`railyard redeliver`), it takes the id and the key a
delivery of the same issue or pull request gets now, so the two are processed in one order."""

from __future__ import annotations

from sqlalchemy import Connection, bindparam, select, update

from app.contracts.webhook_payloads import UnreadableBody, WebhookBody, describe
from app.store.intake import KEY_LIMIT, as_column
from app.store.tables import WebhookDeliveryRow, table

deliveries = table(WebhookDeliveryRow)
_NAMED = select(deliveries.c.event, deliveries.c.payload).where(
    deliveries.c.delivery_id == bindparam("b_id"), deliveries.c.repository_id.is_(None)
)
_REKEY = update(deliveries).where(deliveries.c.delivery_id == bindparam("b_id"))


def key_by_id(connection: Connection, delivery_id: str) -> None:
    """Give the delivery its repository's id and the key by it, when it has neither and its
    payload names the id (nothing changes otherwise)."""
    row = connection.execute(_NAMED, {"b_id": delivery_id}).first()
    if row is None or row.payload is None:
        return
    try:
        facts = describe(row.event, WebhookBody(row.payload.encode()))
    except UnreadableBody:
        return
    if facts.repository_id is not None:
        rekeyed = _REKEY.values(
            repository_id=facts.repository_id, ordering_key=as_column(facts.ordering_key, KEY_LIMIT)
        )
        connection.execute(rekeyed, {"b_id": delivery_id})
