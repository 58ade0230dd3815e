"""The accounts seen acting under a login `agents:` lists, so a rename keeps them agents
(`agent_accounts`, `app.store.agent_accounts`).

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-08
"""

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "agent_accounts",
        sa.Column("installation_id", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("account_id", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("login", sa.String(), primary_key=True),
        sa.Column("seen_at", sa.Float(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("agent_accounts")
