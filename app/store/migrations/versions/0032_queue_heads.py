"""`pull_requests.queue_heads`: the merge-queue commits GitHub built for an open PR (the last few).

GitHub merges a queued PR on the required checks of the queue's commit, not the PR's head. The
`railyard` check there was written once, when the queue asked; a change to the ticket while the
PR waits (a `/reopen`, a lapse) now writes it again, as it writes the PR's own check, so the
queue does not merge on a success the record no longer gives.

Revision ID: 0032
Revises: 0031
Create Date: 2026-12-08
"""

import sqlalchemy as sa
from alembic import op

revision = "0032"
down_revision = "0031"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("pull_requests") as table:
        table.add_column(sa.Column("queue_heads", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("pull_requests") as table:
        table.drop_column("queue_heads")
