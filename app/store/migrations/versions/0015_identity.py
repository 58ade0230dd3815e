"""Repository identity and browser sessions (SPEC *Repository identity and sessions*).

Tickets get GitHub's repository id; `repositories` maps each id to the name the records use
now; pull requests keep whether a fork's author held a role; `web_sessions` keeps browser
sessions, so signing out ends them on every process.

Rows from before this migration: a ticket's id is taken from the webhook payloads still stored
(the newest delivery naming its repository, when every stored payload of that name agrees on
one id); the others stay without an id, shown to nobody, until a webhook of that repository
adopts them (only a repository created before the ticket can: see `app.store.repositories`).

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-01
"""

import json
import time
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "web_sessions",
        sa.Column("key", sa.String(), primary_key=True),
        sa.Column("account_id", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=False),
        sa.Column("ended_at", sa.Float(), nullable=True),
    )
    op.create_index("ix_web_sessions_expires_at", "web_sessions", ["expires_at"])
    op.create_table(
        "repositories",
        sa.Column("id", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("full_name", sa.String(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
    )
    op.create_index("ix_repositories_full_name", "repositories", ["full_name"], unique=True)
    with op.batch_alter_table("tickets") as batch:
        batch.add_column(sa.Column("repository_id", sa.BigInteger(), nullable=True))
    op.create_index("ix_tickets_repository_id", "tickets", ["repository_id"])
    with op.batch_alter_table("pull_requests") as batch:
        batch.add_column(sa.Column("author_has_role", sa.Boolean(), nullable=True))
    _backfill(op.get_bind())


def _backfill(connection: sa.Connection) -> None:
    """Each ticketed repository's id from the stored payloads that name it, when they agree."""
    names = [row[0] for row in connection.execute(sa.text("SELECT DISTINCT repository FROM tickets"))]
    taken: set[int] = set()
    for name in names:
        ids = _ids_in_payloads(connection, name)
        if len(ids) != 1:
            continue  # no payload left, or the name was reused before: no way to tell which
        [repository_id] = ids
        if repository_id in taken:
            continue
        taken.add(repository_id)
        connection.execute(
            sa.text("INSERT INTO repositories (id, full_name, updated_at) VALUES (:id, :name, :at)"),
            {"id": repository_id, "name": name, "at": time.time()},
        )
        connection.execute(
            sa.text("UPDATE tickets SET repository_id = :id WHERE repository = :name"),
            {"id": repository_id, "name": name},
        )


def _ids_in_payloads(connection: sa.Connection, name: str) -> set[int]:
    rows = connection.execute(
        sa.text(
            "SELECT payload FROM webhook_deliveries WHERE lower(repository) = :name AND payload IS NOT NULL"
        ),
        {"name": name},
    )
    found: set[int] = set()
    for (payload,) in rows:
        try:
            body: Any = json.loads(payload)
        except ValueError:
            continue
        repository = body.get("repository") if isinstance(body, dict) else None
        if isinstance(repository, dict) and isinstance(repository.get("id"), int):
            found.add(repository["id"])
    return found


def downgrade() -> None:
    with op.batch_alter_table("pull_requests") as batch:
        batch.drop_column("author_has_role")
    op.drop_index("ix_tickets_repository_id", "tickets")
    with op.batch_alter_table("tickets") as batch:
        batch.drop_column("repository_id")
    op.drop_index("ix_repositories_full_name", "repositories")
    op.drop_table("repositories")
    op.drop_index("ix_web_sessions_expires_at", "web_sessions")
    op.drop_table("web_sessions")
