"""Tickets, their append-only event log, attempts, delivery records and operations.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

from app.store.columns import UTCDateTime

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

APPEND_ONLY = ("ticket_events", "attempts", "delivery_records", "operations")


def upgrade() -> None:
    op.create_table(
        "tickets",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("repository", sa.String(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("work", sa.String(), nullable=True),
        sa.Column("integration", sa.String(), nullable=False),
        sa.Column("deployment", sa.String(), nullable=False),
        sa.Column("snapshot", sa.JSON(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.UniqueConstraint("repository", "number", name="uq_tickets_repository_number"),
    )
    op.create_index("ix_tickets_repository", "tickets", ["repository"])
    op.create_table(
        "ticket_events",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("ticket_id", sa.Integer(), sa.ForeignKey("tickets.id"), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("type", sa.String(), nullable=False),
        sa.Column("actor", sa.String(), nullable=False),
        sa.Column("role", sa.String(), nullable=True),
        sa.Column("at", UTCDateTime(), nullable=False),
        sa.Column("operation_id", sa.String(), nullable=False),
        sa.Column("policy_version", sa.String(), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.UniqueConstraint("ticket_id", "revision", name="uq_ticket_events_revision"),
    )
    op.create_index("ix_ticket_events_operation_id", "ticket_events", ["operation_id"])
    op.create_table(
        "attempts",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("ticket_id", sa.Integer(), sa.ForeignKey("tickets.id"), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("runner", sa.String(), nullable=False),
        sa.Column("opened_by", sa.String(), nullable=False),
        sa.Column("check_in_minutes", sa.Integer(), nullable=True),
        sa.Column("branch", sa.String(), nullable=True),
        sa.Column("operation_id", sa.String(), nullable=False),
        sa.Column("opened_at", UTCDateTime(), nullable=False),
        sa.UniqueConstraint("ticket_id", "number", name="uq_attempts_number"),
    )
    op.create_table(
        "delivery_records",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("ticket_id", sa.Integer(), sa.ForeignKey("tickets.id"), nullable=False),
        sa.Column("attempt_id", sa.Integer(), sa.ForeignKey("attempts.id"), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("runner", sa.String(), nullable=False),
        sa.Column("summary", sa.String(), nullable=False),
        sa.Column("branch", sa.String(), nullable=True),
        sa.Column("commit_sha", sa.String(), nullable=True),
        sa.Column("pull_request", sa.Integer(), nullable=True),
        sa.Column("artifacts", sa.JSON(), nullable=False),
        sa.Column("comment_id", sa.BigInteger(), nullable=True),
        sa.Column("comment_at", UTCDateTime(), nullable=True),
        sa.Column("operation_id", sa.String(), nullable=False),
        sa.Column("policy_version", sa.String(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.UniqueConstraint("operation_id"),
    )
    op.create_table(
        "operations",
        sa.Column("operation_id", sa.String(), primary_key=True),
        sa.Column("repository", sa.String(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("ticket_id", sa.Integer(), nullable=True),
        sa.Column("change", sa.String(), nullable=False),
        sa.Column("actor", sa.String(), nullable=False),
        sa.Column("outcome", sa.String(), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("first_revision", sa.Integer(), nullable=True),
        sa.Column("refusal_code", sa.String(), nullable=True),
        sa.Column("refusal_reason", sa.String(), nullable=True),
        sa.Column("refusal_hint", sa.String(), nullable=True),
        sa.Column("policy_version", sa.String(), nullable=False),
        sa.Column("at", UTCDateTime(), nullable=False),
    )
    for table in APPEND_ONLY:
        _forbid_changes(table)


def _forbid_changes(table: str) -> None:
    """The database itself refuses UPDATE and DELETE on append-only tables."""
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        for verb in ("UPDATE", "DELETE"):
            op.execute(
                f"CREATE TRIGGER {table}_no_{verb.lower()} BEFORE {verb} ON {table} "
                f"BEGIN SELECT RAISE(ABORT, '{table} is append-only'); END"
            )
    elif dialect == "postgresql":
        op.execute(
            "CREATE OR REPLACE FUNCTION railyard_append_only() RETURNS trigger AS $$ "
            "BEGIN RAISE EXCEPTION '% is append-only', TG_TABLE_NAME; END $$ LANGUAGE plpgsql"
        )
        op.execute(
            f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
            "FOR EACH ROW EXECUTE FUNCTION railyard_append_only()"
        )


def downgrade() -> None:
    for table in ("operations", "delivery_records", "attempts", "ticket_events", "tickets"):
        op.drop_table(table)
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION IF EXISTS railyard_append_only()")
