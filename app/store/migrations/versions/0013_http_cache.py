"""GETs' ETags and bodies, for conditional requests shared by every process.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "http_cache",
        sa.Column("key", sa.String(), primary_key=True),
        sa.Column("scope", sa.String(), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("etag", sa.String(), nullable=False),
        sa.Column("body", sa.LargeBinary(), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("stored_at", sa.Float(), nullable=False),
    )
    op.create_index("ix_http_cache_stored_at", "http_cache", ["stored_at"])


def downgrade() -> None:
    op.drop_index("ix_http_cache_stored_at", "http_cache")
    op.drop_table("http_cache")
