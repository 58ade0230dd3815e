"""Observations held for replay: checks by head sha, deployment statuses by environment.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "held_observations",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("repository", sa.String(), nullable=False),
        sa.Column("subject", sa.String(), nullable=False),
        sa.Column("fingerprint", sa.String(), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.UniqueConstraint("repository", "fingerprint", name="uq_held_observations"),
    )
    op.create_index("ix_held_observations_repository", "held_observations", ["repository"])
    op.create_index("ix_held_observations_subject", "held_observations", ["subject"])


def downgrade() -> None:
    op.drop_table("held_observations")
