"""Each stored pull request keeps GitHub's ids of its repository and of its head's
(`pull_requests.repository_id`, `head_repository_id`).

Whether a PR's head branch is in its own repository (only then does the branch link tickets)
was decided by comparing names, and names are renamed, passed on and reused: a fork's stored
head name could come to spell the repository's own (the fork deleted, the repository
transferred into its name), or a PR read after a rename name its head otherwise than railyard's
records name the repository. Ids decide now (`policies.links.same_repository`).

Rows from before take the id of the repository their name belongs to now (`repositories`), and
a head named like its PR's repository that same id: the name comparison said it was in it, so it
still is. A fork's head keeps no id (GitHub's is not in the row): with its PR's id known, a head
without one is a fork's. A name railyard never learned an id for leaves both empty, and such a
PR's head is judged by names, as before, until its next event stores the ids.

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-08
"""

import sqlalchemy as sa
from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("pull_requests") as batch:
        batch.add_column(sa.Column("repository_id", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("head_repository_id", sa.BigInteger(), nullable=True))
    op.execute(
        "UPDATE pull_requests SET repository_id = "
        "(SELECT id FROM repositories WHERE repositories.full_name = lower(pull_requests.repository))"
    )
    op.execute(
        "UPDATE pull_requests SET head_repository_id = repository_id "
        "WHERE repository_id IS NOT NULL AND lower(head_repository) = lower(repository)"
    )


def downgrade() -> None:
    with op.batch_alter_table("pull_requests") as batch:
        batch.drop_column("head_repository_id")
        batch.drop_column("repository_id")
