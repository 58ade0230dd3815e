"""Indexes for the release owner's listing and report.

The board pages tickets newest activity first, by repository and work state, in one query:
`tickets (repository, work, updated_at, id)`, `(repository, updated_at, id)` and
`(updated_at, id)` give every filter an index that is already in page order. The per-row
facts of that query look up the ticket's latest `claim_overdue` (`ticket_events (ticket_id,
type, revision)`) and the repository's latest command (`operations (repository, at, operation_id)`); the
report reads a period's events (`ticket_events (at)`).

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01
"""

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

INDEXES = (
    ("ix_tickets_repository_work_activity", "tickets", ["repository", "work", "updated_at", "id"]),
    ("ix_tickets_repository_activity", "tickets", ["repository", "updated_at", "id"]),
    ("ix_tickets_activity", "tickets", ["updated_at", "id"]),
    ("ix_ticket_events_ticket_type", "ticket_events", ["ticket_id", "type", "revision"]),
    ("ix_ticket_events_at", "ticket_events", ["at"]),
    ("ix_operations_repository_at", "operations", ["repository", "at", "operation_id"]),
)


def upgrade() -> None:
    for name, table, columns in INDEXES:
        op.create_index(name, table, columns)


def downgrade() -> None:
    for name, table, _ in reversed(INDEXES):
        op.drop_index(name, table)
