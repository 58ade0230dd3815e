"""The watchdog's other clocks: an attempt's deadline and a delivery's review wait, per attempt.

`signs_of_life` keeps, beside the silence limit, `claims.max_attempt_hours` (null: no deadline)
and `reviews.max_wait_hours` (0: `null` in the file, not watched; null: stored before this
migration, the default 72) as they were when the configuration was last read for the attempt.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("signs_of_life") as batch:
        batch.add_column(sa.Column("max_attempt_hours", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("max_review_wait_hours", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("signs_of_life") as batch:
        batch.drop_column("max_review_wait_hours")
        batch.drop_column("max_attempt_hours")
