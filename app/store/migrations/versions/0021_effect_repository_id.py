"""Each GitHub write keeps the id of the repository it is for (`outbox_effects.repository_id`).

An effect names its repository, and a name can be renamed away and reused by another
repository before any webhook says so; the outbox writes only while GitHub's repository of
that id still has the name (`app.runtime.write_target`). Rows from before this migration take
the id of the repository their name belongs to now (`repositories`); a name railyard never
learned an id for leaves it empty, and such an effect is written as before.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-07
"""

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("outbox_effects") as batch:
        batch.add_column(sa.Column("repository_id", sa.BigInteger(), nullable=True))
    op.execute(
        "UPDATE outbox_effects SET repository_id = "
        "(SELECT id FROM repositories WHERE repositories.full_name = lower(outbox_effects.repository))"
    )


def downgrade() -> None:
    with op.batch_alter_table("outbox_effects") as batch:
        batch.drop_column("repository_id")
