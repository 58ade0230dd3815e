"""The deployment gate keeps every request it answers (`gate_approvals.approved`, `answered_at`),
rejections too, with the commit its range started from (`base`): once it has answered anything
in an environment, only a success of a commit it approved there, or of one a range of its
started from, may start a range (`handlers.gate_base`). Before, only approvals were kept, and a
success of any deployment created before the first approval counted: a first request rejected
left that window open, and a deployment's id says when it was created, not when its `success`
was posted.

Rows from before are approvals (`approved` true) whose base is unknown (NULL). A downgrade drops
the rejected rows: 0027 reads every row as an approval, and a rejected commit must never become
a trusted base.

Revision ID: 0028
Revises: 0027
Create Date: 2026-12-07
"""

import sqlalchemy as sa
from alembic import op

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("gate_approvals") as batch:
        batch.add_column(sa.Column("approved", sa.Boolean(), nullable=False, server_default=sa.true()))
        batch.add_column(sa.Column("base", sa.String(), nullable=True))
        batch.alter_column("approved_at", new_column_name="answered_at")
    with op.batch_alter_table("gate_approvals") as batch:
        # Only the rows from before are approvals by default: a new row always says which it is.
        batch.alter_column("approved", server_default=None)


def downgrade() -> None:
    op.execute(sa.text("DELETE FROM gate_approvals WHERE NOT approved"))
    with op.batch_alter_table("gate_approvals") as batch:
        batch.alter_column("answered_at", new_column_name="approved_at")
        batch.drop_column("base")
        batch.drop_column("approved")
