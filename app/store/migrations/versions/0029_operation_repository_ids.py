"""Each stored operation keeps GitHub's id of its repository (`operations.repository_id`).

A refusal stored before its ticket existed has no ticket id, and the door told whether a retry
of its operation (an API key sent again once its kept answer was pruned) was the same ticket's
by the repository's name: a rename made a genuine retry a key reused (422), and a new repository
under the old name got the renamed one's refusal replayed. It compares ids now when both sides
have one (`app.store.operation_rows`).

Rows from before take the id where the records say it without doubt: their ticket's id, or the
id that has held their name since before the operation was stored (`repositories.updated_at`,
the time of its last rename or of its first sight). The others keep no id (compared by name,
as before). `operations` is append-only: the trigger that refuses UPDATE is lifted for the fill
and put back, as 0017 does for `ticket_events`.

Revision ID: 0029
Revises: 0028
Create Date: 2026-12-07
"""

from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None

_BY_TICKET = sa.text(
    "UPDATE operations SET repository_id = "
    "(SELECT tickets.repository_id FROM tickets WHERE tickets.id = operations.ticket_id) "
    "WHERE ticket_id IS NOT NULL"
)
_WITHOUT_ID = sa.text(
    "SELECT operation_id, repository, at FROM operations WHERE repository_id IS NULL "
    "AND operation_id > :after ORDER BY operation_id LIMIT 500"
)
_SET_ID = sa.text("UPDATE operations SET repository_id = :id WHERE operation_id = :operation")


def upgrade() -> None:
    # Not a batch: rebuilding the table on SQLite would drop its append-only triggers.
    op.add_column("operations", sa.Column("repository_id", sa.BigInteger(), nullable=True))
    connection = op.get_bind()
    _allow_updates(connection, allowed=True)
    try:
        connection.execute(_BY_TICKET)
        holders = {
            str(name): (int(repository_id), float(since))
            for repository_id, name, since in connection.execute(
                sa.text("SELECT id, full_name, updated_at FROM repositories")
            )
        }
        after = ""
        while rows := connection.execute(_WITHOUT_ID, {"after": after}).all():  # a page at a time
            after = rows[-1][0]
            found = [
                {"id": repository_id, "operation": operation_id}
                for operation_id, name, at in rows
                if (repository_id := _holder(holders, name, at)) is not None
            ]
            if found:
                connection.execute(_SET_ID, found)
    finally:
        _allow_updates(connection, allowed=False)


def _holder(holders: dict[str, tuple[int, float]], name: str, at: datetime | str) -> int | None:
    """The id that holds `name` now and has held it since before `at` (none renamed it since)."""
    held = holders.get(name.casefold())
    if held is None:
        return None
    when = at if isinstance(at, datetime) else datetime.fromisoformat(at)  # SQLite: text
    when = when.replace(tzinfo=UTC) if when.tzinfo is None else when
    return held[0] if held[1] <= when.timestamp() else None


def _allow_updates(connection: sa.Connection, *, allowed: bool) -> None:
    """Lift (or put back) the trigger that refuses UPDATE on `operations` (0001's)."""
    if connection.dialect.name == "sqlite":
        if allowed:
            op.execute("DROP TRIGGER IF EXISTS operations_no_update")
        else:
            op.execute(
                "CREATE TRIGGER operations_no_update BEFORE UPDATE ON operations "
                "BEGIN SELECT RAISE(ABORT, 'operations is append-only'); END"
            )
    elif connection.dialect.name == "postgresql":
        verb = "DISABLE" if allowed else "ENABLE"
        op.execute(f"ALTER TABLE operations {verb} TRIGGER operations_append_only")


def downgrade() -> None:
    op.drop_column("operations", "repository_id")  # not a batch: the triggers stay
