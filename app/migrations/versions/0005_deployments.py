"""Deployments and their newest status.

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
        "deployments",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("repository", sa.String(), nullable=False),
        sa.Column("deployment_id", sa.BigInteger(), nullable=False),
        sa.Column("environment", sa.String(), nullable=False),
        sa.Column("sha", sa.String(), nullable=False),
        sa.Column("status", sa.String(), nullable=True),
        sa.Column("status_id", sa.BigInteger(), nullable=False),
        sa.UniqueConstraint("repository", "deployment_id", name="uq_deployments_id"),
    )
    op.create_index("ix_deployments_repository", "deployments", ["repository"])


def downgrade() -> None:
    op.drop_table("deployments")
