"""Each ticket's snapshot notes the watch periods it recorded overdue (`Ticket.noticed`).

A `claim_overdue` (a silence or a deadline) and a `review_overdue` (a delivery's wait) are
recorded once per period; the door told that by the operation id alone, which spells the
repository's name, so a rename recorded the same period again. The ticket now notes the periods
(`policies.notices.period_of`), and its events replay to that note: `railyard audit verify`
compares every stored snapshot with its replay. So every existing snapshot gets the note its
events make (the latest eight periods, each once, in the order recorded), and periods recorded
before this migration are known after a rename too.

The period's spelling is copied here, not imported: a migration must keep doing what it did
when it was written, whatever the code becomes.

Revision ID: 0031
Revises: 0030
Create Date: 2026-12-07
"""

import json
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0031"
down_revision = "0030"
branch_labels = None
depends_on = None

KEPT = 8
_EVENTS = sa.text(
    "SELECT ticket_id, type, data FROM ticket_events "
    "WHERE type IN ('claim_overdue', 'review_overdue') ORDER BY ticket_id, revision"
)
_SNAPSHOT = sa.text("SELECT snapshot FROM tickets WHERE id = :id")


def _period(kind: str, data: dict[str, Any]) -> str:
    if kind == "review_overdue":
        return f"review:{data.get('delivery')}"
    if data.get("reason") == "deadline":
        return f"deadline:{data.get('attempt')}"
    return f"silence:{data.get('attempt')}:{data.get('silent_since')}"


def _decoded(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str | bytes) else value


def _write(bind: sa.Connection, ticket_id: int, snapshot: dict[str, Any]) -> None:
    cast = "CAST(:s AS json)" if bind.dialect.name == "postgresql" else ":s"
    update = sa.text(f"UPDATE tickets SET snapshot = {cast} WHERE id = :id")  # noqa: S608 - a constant
    bind.execute(update, {"s": json.dumps(snapshot), "id": ticket_id})


def upgrade() -> None:
    bind = op.get_bind()
    noted: dict[int, list[str]] = {}
    for ticket_id, kind, data in bind.execute(_EVENTS):
        period, kept = _period(kind, _decoded(data) or {}), noted.setdefault(int(ticket_id), [])
        if period not in kept:
            kept.append(period)
            del kept[:-KEPT]
    for ticket_id, kept in noted.items():
        snapshot = _decoded(bind.execute(_SNAPSHOT, {"id": ticket_id}).scalar())
        if isinstance(snapshot, dict):
            _write(bind, ticket_id, {**snapshot, "noticed": kept})


def downgrade() -> None:
    bind = op.get_bind()
    noted = sa.text("SELECT id, snapshot FROM tickets")
    for ticket_id, snapshot in bind.execute(noted).all():
        decoded = _decoded(snapshot)
        if isinstance(decoded, dict) and "noticed" in decoded:
            _write(bind, int(ticket_id), {k: v for k, v in decoded.items() if k != "noticed"})
