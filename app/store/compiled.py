"""SQLAlchemy statements compiled once per dialect, for the driver's own connections: the store
writes each statement once, with SQLAlchemy, and a read that runs where SQLAlchemy's execution
would cost more than the statement (the event loop's connections, `Database.select_here`) takes
its compiled text and the values of its own literals from here, and its rows as SQLAlchemy
would give them (`named`)."""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.engine import Dialect
from sqlalchemy.sql import Select


@dataclass(frozen=True)
class CompiledSelect:
    """A SELECT in one dialect: its SQL, the values its literals bind, and its rows' type (a
    named tuple of its columns: read by position or by name, as SQLAlchemy's rows are)."""

    sql: str
    defaults: dict[str, Any]
    row: type[tuple[Any, ...]]


_COMPILED: dict[tuple[Select[Any], str], CompiledSelect] = {}


def compiled_for(statement: Select[Any], dialect: Dialect) -> CompiledSelect:
    """`statement` in `dialect`'s placeholders, with the values its literals bind (a `LIKE '/%'`
    pattern), compiled on first use. For statements built once, at module level: each stays in
    the cache for the life of the process."""
    key = (statement, dialect.name)
    found = _COMPILED.get(key)
    if found is None:
        compiled = statement.compile(dialect=dialect)
        names = [str(column.key) for column in statement.selected_columns]
        row = namedtuple("Row", names, rename=True)  # type: ignore[misc]
        found = _COMPILED[key] = CompiledSelect(str(compiled), dict(compiled.params), row)
    return found


def as_stored(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A driver's row with its times as the store's columns give them (`UTCDateTime`: aware, in
    UTC, whatever the session's time zone)."""
    return tuple(value.astimezone(UTC) if isinstance(value, datetime) else value for value in row)
