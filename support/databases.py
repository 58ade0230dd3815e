"""Test and benchmark databases: a fresh migrated SQLite file; an emptied PostgreSQL schema."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import text

from app.store.database import Database


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
