"""Fork-aware links, links at merge, and expiring held observations.

`pull_requests.head_repository` (a fork's branch name links nothing) and `merged_at` (links
reported after the merge never count); `held_observations.held_at`, so that maintenance can
expire them. Rows held before this migration count as held now.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01
"""

import time

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("pull_requests") as batch:
        batch.add_column(sa.Column("head_repository", sa.String(), nullable=True))
        batch.add_column(sa.Column("merged_at", sa.Float(), nullable=True))
    with op.batch_alter_table("held_observations") as batch:
        batch.add_column(sa.Column("held_at", sa.Float(), nullable=False, server_default=str(time.time())))
    with op.batch_alter_table("held_observations") as batch:
        batch.alter_column("held_at", server_default=None)
    op.create_index("ix_held_observations_held_at", "held_observations", ["held_at"])


def downgrade() -> None:
    op.drop_index("ix_held_observations_held_at", "held_observations")
    with op.batch_alter_table("held_observations") as batch:
        batch.drop_column("held_at")
    with op.batch_alter_table("pull_requests") as batch:
        batch.drop_column("merged_at")
        batch.drop_column("head_repository")
