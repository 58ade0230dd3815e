"""Each account's browser sessions found by account, newest first (`web_sessions`).

Starting a session keeps only the account's newest live ones (`app.store.web_sessions`), read
through this index rather than the whole table. Rows from before it stay until they expire or
their account signs in again.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-07
"""

from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_web_sessions_account_created", "web_sessions", ["account_id", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_web_sessions_account_created", "web_sessions")
