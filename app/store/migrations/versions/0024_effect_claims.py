"""Each GitHub write counts its claims that ended with no outcome (`outbox_effects.claims`).

An effect whose write kills its process, or whose lease always runs out before an outcome is
recorded, was claimed again for ever, its batch waiting behind it each time; the outbox now
fails it, unperformed, once claimed past its last try with none (`app.runtime.outbox`).
`attempts` keeps meaning tries that ended in a failure. Existing rows start at 0.

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-08
"""

import sqlalchemy as sa
from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("outbox_effects") as batch:
        batch.add_column(sa.Column("claims", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("outbox_effects") as batch:
        batch.drop_column("claims")
