"""The audit chain (SPEC *Audit log*): every event stores `digest` (see `policies.audit`).

Existing events get theirs here, ticket by ticket in revision order, a page of events at a time
(a large log never needs all its rows in memory). `ticket_events` is append-only: its UPDATE
trigger is lifted for the backfill only, and put back in the same transaction.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

from app.store.codec import audit_event
from app.store.columns import UTCDateTime
from policies import audit

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

PAGE = 500

_tickets = sa.table("tickets", sa.column("id", sa.Integer()))
_events = sa.table(
    "ticket_events",
    sa.column("id", sa.Integer()),
    sa.column("ticket_id", sa.Integer()),
    sa.column("revision", sa.Integer()),
    sa.column("type", sa.String()),
    sa.column("actor", sa.String()),
    sa.column("actor_id", sa.BigInteger()),
    sa.column("role", sa.String()),
    sa.column("at", UTCDateTime()),
    sa.column("operation_id", sa.String()),
    sa.column("policy_version", sa.String()),
    sa.column("data", sa.JSON()),
    sa.column("digest", sa.String()),
)


def upgrade() -> None:
    # Not a batch: rebuilding the table on SQLite would drop its append-only triggers.
    op.add_column("ticket_events", sa.Column("digest", sa.String(), nullable=True))
    connection = op.get_bind()
    _allow_updates(connection, allowed=True)
    try:
        backfill(connection)
    finally:
        _allow_updates(connection, allowed=False)


def backfill(connection: sa.Connection, page: int = PAGE) -> None:
    """Chain every stored event, ticket by ticket in revision order, `page` events at a time."""
    after_ticket = 0
    while True:
        ticket_ids = connection.execute(
            sa.select(_tickets.c.id).where(_tickets.c.id > after_ticket).order_by(_tickets.c.id).limit(page)
        ).scalars().all()  # fmt: skip
        if not ticket_ids:
            return
        for ticket_id in ticket_ids:
            _chain_ticket(connection, ticket_id, page)
        after_ticket = ticket_ids[-1]


def _chain_ticket(connection: sa.Connection, ticket_id: int, page: int) -> None:
    previous, after_revision = audit.seed(ticket_id), 0
    while True:
        rows = connection.execute(
            sa.select(_events)
            .where(_events.c.ticket_id == ticket_id, _events.c.revision > after_revision)
            .order_by(_events.c.revision)
            .limit(page)
        ).mappings().all()  # fmt: skip
        if not rows:
            return
        digests = []
        for row in rows:
            previous = audit.chain(previous, audit_event(row))
            digests.append({"b_id": row["id"], "b_digest": previous})
        connection.execute(
            sa.update(_events)
            .where(_events.c.id == sa.bindparam("b_id"))
            .values(digest=sa.bindparam("b_digest")),
            digests,
        )
        after_revision = rows[-1]["revision"]


def _allow_updates(connection: sa.Connection, *, allowed: bool) -> None:
    """Lift (or put back) the trigger that refuses UPDATE on `ticket_events` (0001's)."""
    if connection.dialect.name == "sqlite":
        if allowed:
            op.execute("DROP TRIGGER IF EXISTS ticket_events_no_update")
        else:
            op.execute(
                "CREATE TRIGGER ticket_events_no_update BEFORE UPDATE ON ticket_events "
                "BEGIN SELECT RAISE(ABORT, 'ticket_events is append-only'); END"
            )
    elif connection.dialect.name == "postgresql":
        verb = "DISABLE" if allowed else "ENABLE"
        op.execute(f"ALTER TABLE ticket_events {verb} TRIGGER ticket_events_append_only")


def downgrade() -> None:
    op.drop_column("ticket_events", "digest")  # not a batch: rebuilding the table would drop its triggers
