"""Migration 0029 on SQLite and PostgreSQL: each operation keeps GitHub's id of its repository
(`operations.repository_id`). Rows from before take their ticket's id, or the id that has held
their name since before they were stored; any other stays without one (compared by name). The
table stays append-only through the fill and after."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from alembic import command
from sqlalchemy import Connection, insert, inspect, select, text
from sqlalchemy.exc import DBAPIError

from app.store.database import Database, alembic_config
from app.store.repositories import repositories
from app.store.tickets import operations, tickets
from support.databases import migrated_back_to

RENAMED = datetime(2026, 12, 1, tzinfo=UTC)  # acme/app renamed acme/tools (4242)
REUSED = RENAMED + timedelta(days=2)  # a new repository (9999) took the name acme/app


@pytest.fixture
def before_0029(database: Database) -> Iterator[Database]:
    """The database at 0028, when operations kept their repository's name only, back to head after."""
    with migrated_back_to(database, "0028"):
        yield database


def operation(connection: Connection, operation_id: str, name: str, at: datetime, **row: Any) -> None:
    """An operation row as 0028 stored it (no repository id): cody's refused `/publish`."""
    connection.execute(
        insert(operations).values(
            operation_id=operation_id, repository=name, number=13, change="/publish", actor="cody",
            actor_id=5, outcome="refused", revision=0, first_revision=None, refusal_code="not_allowed",
            refusal_reason="no role", refusal_hint="", policy_version="p", at=at, **row,
        )
    )  # fmt: skip


def ids(database: Database) -> dict[str, int | None]:
    with database.read() as connection:
        rows = connection.execute(text("SELECT operation_id, repository_id FROM operations")).all()
    return {operation_id: repository_id for operation_id, repository_id in rows}


def refuses_updates(database: Database) -> bool:
    try:
        with database.write() as connection:
            connection.execute(text("UPDATE operations SET actor = 'mallory'"))
    except DBAPIError:
        return True
    return False


def test_rows_from_before_take_the_id_the_records_give_without_doubt(before_0029: Database) -> None:
    """At 0028: an operation on the ticket row of 4242 (stored under acme/app, before the rename)
    takes 4242; a refusal on acme/tools after 4242 took that name takes 4242; refusals on
    acme/app before 9999 took it (4242's then, or no one's) and on a name no id holds take none."""
    with before_0029.write() as connection:
        at = RENAMED.timestamp()
        connection.execute(insert(repositories).values(id=4242, full_name="acme/tools", updated_at=at))
        connection.execute(
            insert(repositories).values(id=9999, full_name="acme/app", updated_at=REUSED.timestamp())
        )
        ticket = connection.execute(
            insert(tickets).values(
                repository="acme/tools",
                number=12,
                revision=1,
                work="draft",
                integration="none",
                deployment="none",
                snapshot={},
                created_at=RENAMED,
                updated_at=RENAMED,
                repository_id=4242,
            )
        ).inserted_primary_key
        assert ticket is not None
        operation(connection, "on-the-ticket", "acme/app", RENAMED - timedelta(days=1), ticket_id=ticket[0])
        operation(connection, "after-the-rename", "acme/tools", RENAMED + timedelta(hours=1))
        operation(connection, "before-the-reuse", "acme/app", REUSED - timedelta(hours=1))
        operation(connection, "after-the-reuse", "acme/app", REUSED + timedelta(hours=1))
        operation(connection, "no-ones", "acme/lone", REUSED)
    command.upgrade(alembic_config(before_0029.url), "head")
    assert ids(before_0029) == {
        "on-the-ticket": 4242,
        "after-the-rename": 4242,
        "before-the-reuse": None,
        "after-the-reuse": 9999,
        "no-ones": None,
    }
    assert refuses_updates(before_0029)  # the trigger lifted for the fill is back


def test_a_downgrade_drops_the_ids_and_keeps_the_rows(database: Database) -> None:
    """Downgraded to 0028: the column is gone, the operations stay, still append-only; upgraded
    again, the ids the records give are filled once more."""
    config = alembic_config(database.url)
    with database.write() as connection:
        connection.execute(
            insert(repositories).values(id=4242, full_name="acme/tools", updated_at=RENAMED.timestamp())
        )
        connection.execute(
            insert(operations).values(
                operation_id="api:5:K", repository="acme/tools", number=13, repository_id=4242,
                change="/publish", actor="cody", actor_id=5, outcome="refused", revision=0,
                first_revision=None, refusal_code="not_allowed", refusal_reason="no role",
                refusal_hint="", policy_version="p", at=REUSED,
            )
        )  # fmt: skip
    command.downgrade(config, "0028")
    try:
        with database.read() as connection:
            columns = {column["name"] for column in inspect(connection).get_columns("operations")}
            assert "repository_id" not in columns
            kept = connection.execute(text("SELECT operation_id, repository FROM operations")).all()
        assert [tuple(row) for row in kept] == [("api:5:K", "acme/tools")]
        assert refuses_updates(database)
    finally:
        command.upgrade(config, "head")
    assert ids(database) == {"api:5:K": 4242}
    with database.read() as connection:
        assert connection.execute(select(operations.c.repository_id)).scalar() == 4242
