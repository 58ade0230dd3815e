"""The deployment gate keeps every request it answers (`gate_approvals.approved`, `answered_at`),
rejections too: a success of a deployment created before the gate's first answer in an
environment may still start a range, and that first answer was, before, its first approval. A
first request rejected left the window open: a success forged on a deployment created after it
started the next request's range (`handlers.gate_base`).

Rows from before are approvals (`approved` true). A downgrade drops the rejected rows: 0027
reads every row as an approval, and a rejected commit must never become a trusted base.

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
        batch.alter_column("approved_at", new_column_name="answered_at")
    with op.batch_alter_table("gate_approvals") as batch:
        # Only the rows from before are approvals by default: a new row always says which it is.
        batch.alter_column("approved", server_default=None)


def downgrade() -> None:
    op.execute(sa.text("DELETE FROM gate_approvals WHERE NOT approved"))
    with op.batch_alter_table("gate_approvals") as batch:
        batch.alter_column("answered_at", new_column_name="approved_at")
        batch.drop_column("approved")
