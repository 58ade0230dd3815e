"""The API's per-account budgets, and replies that go unanswered over the limit.

`api_budgets` counts each account's API requests per scope and fixed window (commands in a
repository per hour, role-less requests per hour, reads per minute) before any call is made
for them; `replies.silent` records a comment left unanswered because the account already had
its one reaction of the window.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "api_budgets",
        sa.Column("account_id", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("scope", sa.String(), primary_key=True),
        sa.Column("window_start", sa.Float(), primary_key=True),
        sa.Column("spent", sa.Integer(), nullable=False),
    )
    op.create_index("ix_api_budgets_window_start", "api_budgets", ["window_start"])
    op.create_index("ix_api_answers_at", "api_answers", ["at"])
    with op.batch_alter_table("replies") as batch:
        batch.add_column(sa.Column("silent", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("replies") as batch:
        batch.drop_column("silent")
    op.drop_index("ix_api_answers_at", "api_answers")
    op.drop_index("ix_api_budgets_window_start", "api_budgets")
    op.drop_table("api_budgets")
