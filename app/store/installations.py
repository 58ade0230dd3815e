"""Installations of the app and the repositories they cover.

Uninstalling marks the installation deleted: railyard stops acting for it and keeps
every record.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import Connection, bindparam, select

from app.store.database import Database, insert_for
from app.store.tables import InstallationRepositoryRow, InstallationRow, TicketRow, table
from handlers.installations import ACTIVE, DELETED, SUSPENDED

installations = table(InstallationRow)
installation_repositories = table(InstallationRepositoryRow)
tickets = table(TicketRow)
__all__ = ["ACTIVE", "DELETED", "SUSPENDED"]


def set_installation(
    connection: Connection, installation_id: int, account: str, status: str, now: float
) -> None:
    """Record an installation's current status."""
    insert = insert_for(connection)
    statement = insert(installations).values(
        id=installation_id, account=account, status=status, updated_at=now
    )
    connection.execute(
        statement.on_conflict_do_update(
            index_elements=["id"], set_={"account": account, "status": status, "updated_at": now}
        )
    )


def set_repositories(
    connection: Connection, installation_id: int, repositories: Iterable[str], active: bool, now: float
) -> None:
    """Record repositories added to (or removed from) an installation."""
    insert = insert_for(connection)
    for repository in repositories:
        statement = insert(installation_repositories).values(
            installation_id=installation_id,
            repository=repository.casefold(),
            active=active,
            updated_at=now,
        )
        connection.execute(
            statement.on_conflict_do_update(
                index_elements=["installation_id", "repository"],
                set_={"active": active, "updated_at": now},
            )
        )


# Built once: `installation_status` runs before every GitHub write.
_STATUS = select(installations.c.status).where(installations.c.id == bindparam("b_installation"))


def installation_status(connection: Connection, installation_id: int) -> str | None:
    """`active`, `suspended`, `deleted`, or None when railyard has never heard of it."""
    return connection.execute(_STATUS, {"b_installation": installation_id}).scalar_one_or_none()


def active_repositories(connection: Connection, installation_id: int) -> list[str]:
    """The repositories an installation currently covers."""
    rows = connection.execute(
        select(installation_repositories.c.repository)
        .where(
            installation_repositories.c.installation_id == installation_id,
            installation_repositories.c.active.is_(True),
        )
        .order_by(installation_repositories.c.repository)
    )
    return [row[0] for row in rows]


def status_of(database: Database, installation_id: int) -> str | None:
    """`installation_status` in a read of its own."""
    with database.read() as connection:
        return installation_status(connection, installation_id)


def installations_of_tickets(database: Database, repositories: Sequence[str]) -> dict[str, int | None]:
    """The installation each repository's tickets were last heard of through, by the name the
    tickets are kept under (None: none known)."""
    found: dict[str, int | None] = dict.fromkeys(repositories)
    query = (
        select(tickets.c.repository, tickets.c.installation_id)
        .where(tickets.c.repository.in_(list(repositories)), tickets.c.installation_id.is_not(None))
        .distinct()
    )
    with database.read() as connection:
        for repository, installation_id in connection.execute(query):
            found[str(repository)] = int(installation_id)
    return found
