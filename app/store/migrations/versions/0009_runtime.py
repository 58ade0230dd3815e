"""GitHub's per-installation limits, shared by every process: the pause and the write slot.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "installation_limits",
        sa.Column("installation_id", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("paused_until", sa.Float(), nullable=False, server_default="0"),
        sa.Column("next_content_write_at", sa.Float(), nullable=False, server_default="0"),
    )


def downgrade() -> None:
    op.drop_table("installation_limits")
