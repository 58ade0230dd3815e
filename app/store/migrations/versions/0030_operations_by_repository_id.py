"""An index on `operations (repository_id, number)`: a ticket's refused commands (`railyard
events`, the API's events) are read by its repository's GitHub id since the name they were
refused under may have been renamed away or taken by another repository
(`app.store.operation_rows.refusals`).

Revision ID: 0030
Revises: 0029
Create Date: 2026-12-07
"""

from alembic import op

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_operations_repository_id_number", "operations", ["repository_id", "number"])


def downgrade() -> None:
    op.drop_index("ix_operations_repository_id_number", table_name="operations")
