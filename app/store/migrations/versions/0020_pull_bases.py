"""The branch each pull request targets (app/store/pulls.py): mergeability is an answer about
one head into one base, so a PR retargeted elsewhere no longer shows its old base's answer.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-07
"""

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Rows stored before keep NULL (base not known) until the PR's next event stores it.
    with op.batch_alter_table("pull_requests") as batch:
        batch.add_column(sa.Column("base_ref", sa.String(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("pull_requests") as batch:
        batch.drop_column("base_ref")
