"""The deployment gate's approvals (`gate_approvals`, `app.store.gate_approvals`): once an
environment has one, only a deployment of a commit the gate approved there starts a later
request's range, so a success status posted through the REST API for a deployment no rule
guarded no longer empties the range.

Revision ID: 0027
Revises: 0026
Create Date: 2026-12-09
"""

import sqlalchemy as sa
from alembic import op

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "gate_approvals",
        sa.Column("repository_id", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("environment", sa.String(), primary_key=True),
        sa.Column("sha", sa.String(), primary_key=True),
        sa.Column("request", sa.String(), primary_key=True),
        sa.Column("run_id", sa.BigInteger(), nullable=False),
        sa.Column("deployment_id", sa.BigInteger(), nullable=True),
        sa.Column("approved_at", sa.Float(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("gate_approvals")
