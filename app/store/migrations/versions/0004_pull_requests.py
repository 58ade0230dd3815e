"""Pull requests and the tickets they link.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "pull_requests",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("repository", sa.String(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("head_ref", sa.String(), nullable=True),
        sa.Column("head_sha", sa.String(), nullable=True),
        sa.Column("url", sa.String(), nullable=False),
        sa.Column("open", sa.Boolean(), nullable=False),
        sa.Column("merged", sa.Boolean(), nullable=False),
        sa.Column("merge_commit", sa.String(), nullable=True),
        sa.Column("linked", sa.JSON(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.UniqueConstraint("repository", "number", name="uq_pull_requests_number"),
    )
    op.create_index("ix_pull_requests_repository", "pull_requests", ["repository"])
    op.create_index("ix_pull_requests_head_ref", "pull_requests", ["head_ref"])
    op.create_index("ix_pull_requests_head_sha", "pull_requests", ["head_sha"])


def downgrade() -> None:
    op.drop_table("pull_requests")
