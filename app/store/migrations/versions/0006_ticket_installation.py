"""The installation each ticket is reached through, and each pull request's author.

The status comment and the check-run are written through the installation that last
brought news of the ticket; the check on a PR that links no ticket depends on who opened it.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tickets") as batch:
        batch.add_column(sa.Column("installation_id", sa.BigInteger(), nullable=True))
    with op.batch_alter_table("pull_requests") as batch:
        batch.add_column(sa.Column("author", sa.String(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("pull_requests") as batch:
        batch.drop_column("author")
    with op.batch_alter_table("tickets") as batch:
        batch.drop_column("installation_id")
