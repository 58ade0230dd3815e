"""Test and benchmark databases: a fresh migrated SQLite file; an emptied PostgreSQL schema."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from alembic import command
from sqlalchemy import text

from app.store.database import Database, alembic_config


def sqlite_database(path: Path) -> Database:
    """A fresh, migrated SQLite file."""
    database = Database(f"sqlite:///{path}", pool_size=12)
    database.migrate()
    return database


def reset_schema(database: Database) -> None:
    """Empty a PostgreSQL test database completely (then `migrate` builds it again)."""
    with database.engine.begin() as connection:
        connection.execute(text("DROP SCHEMA public CASCADE"))
        connection.execute(text("CREATE SCHEMA public"))


@contextlib.contextmanager
def migrated_back_to(database: Database, revision: str) -> Iterator[Database]:
    """The database downgraded to `revision` for a migration's test, upgraded to head after."""
    config = alembic_config(database.url)
    command.downgrade(config, revision)
    try:
        yield database
    finally:
        command.upgrade(config, "head")
