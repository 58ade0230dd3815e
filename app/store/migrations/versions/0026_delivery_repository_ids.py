"""Each webhook delivery keeps GitHub's id of its repository (`webhook_deliveries.repository_id`),
and names the repository by that id in its ordering key.

A key named the repository by its name (`acme/web#12`): a rename between two deliveries of one
issue or pull request put them under two keys, processed in parallel rather than in the order
GitHub sent them. The deployment gate found the repository's pending closes by name too, so a
close stored before a rename was not waited for. Both go by id now.

Pending rows from before take the id their payload gives and their key is rewritten to it, so
a ticket's deliveries stored before and after the upgrade stay in one order. Other rows keep
their key (nothing orders them any more) and no id; a pending row whose payload gives no id
keeps its name, as a new one would.

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-08
"""

import json
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None


_SEPARATORS = ("#", "!", "@", ":", "^")
"""What follows the repository in a key (`app.contracts.webhook_payloads._ordering_key`)."""


def upgrade() -> None:
    with op.batch_alter_table("webhook_deliveries") as batch:
        batch.add_column(sa.Column("repository_id", sa.BigInteger(), nullable=True))
    connection = op.get_bind()
    after = 0
    while batch_rows := connection.execute(_PENDING, {"after": after}).all():  # a backlog, a page at a time
        after = batch_rows[-1][0]
        for seq, repository, key, payload in batch_rows:
            repository_id = _repository_id(payload)
            if repository_id is None:
                continue
            if key is not None and key.startswith(repository) and not key.startswith("installation:"):
                key = str(repository_id) + key[len(repository) :]
            connection.execute(_REKEY, {"id": repository_id, "key": key, "seq": seq})


_PENDING = sa.text(
    "SELECT seq, repository, ordering_key, payload FROM webhook_deliveries WHERE status = 'pending' "
    "AND repository IS NOT NULL AND payload IS NOT NULL AND seq > :after ORDER BY seq LIMIT 200"
)
_REKEY = sa.text("UPDATE webhook_deliveries SET repository_id = :id, ordering_key = :key WHERE seq = :seq")


def _repository_id(payload: str) -> int | None:
    try:
        body: Any = json.loads(payload)
    except ValueError:
        return None
    repository = body.get("repository") if isinstance(body, dict) else None
    found = repository.get("id") if isinstance(repository, dict) else None
    return found if isinstance(found, int) and not isinstance(found, bool) else None


def downgrade() -> None:
    # 0025's intake names the repository in a new delivery's key: a pending one keyed by its
    # id takes the name again, or the two of one issue would run side by side.
    connection = op.get_bind()
    pending = connection.execute(
        sa.text(
            "SELECT seq, repository, repository_id, ordering_key FROM webhook_deliveries "
            "WHERE status = 'pending' AND repository IS NOT NULL AND repository_id IS NOT NULL "
            "AND ordering_key IS NOT NULL"
        )
    ).all()
    for seq, repository, repository_id, key in pending:
        prefix = str(repository_id)
        if key.startswith(prefix) and key[len(prefix) : len(prefix) + 1] in _SEPARATORS:
            connection.execute(
                sa.text("UPDATE webhook_deliveries SET ordering_key = :key WHERE seq = :seq"),
                {"key": (repository + key[len(prefix) :])[:600], "seq": seq},
            )
    with op.batch_alter_table("webhook_deliveries") as batch:
        batch.drop_column("repository_id")
