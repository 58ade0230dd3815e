"""Installation tokens shared by every process, sealed (app/store/token_cache.py).

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-06
"""

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "installation_tokens",
        sa.Column("key", sa.String(), nullable=False),
        sa.Column("sealed", sa.LargeBinary(), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("key"),
    )
    op.create_index("ix_installation_tokens_expires_at", "installation_tokens", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_installation_tokens_expires_at", "installation_tokens")
    op.drop_table("installation_tokens")
