"""SQLAlchemy statements compiled once per dialect, for the driver's own connections: the store
writes each statement once, with SQLAlchemy, and a read that runs where SQLAlchemy's execution
would cost more than the statement (the event loop's connections, `Database.select_here`) takes
its compiled text and the values of its own literals from here, and its rows as SQLAlchemy
would give them (`as_stored`, read by position or by name)."""

from __future__ import annotations

import weakref
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

    def bound(self, parameters: dict[str, Any]) -> dict[str, Any]:
        """The values to send: the literals' and `parameters`, every other bind given (SQLAlchemy
        says so too, where the driver would send NULL) and every time aware (the column's
        `UTCDateTime` refuses a naive one; the server would read it in the session's zone)."""
        values = {**self.defaults, **parameters}
        missing = sorted(
            name for name, value in self.defaults.items() if value is None and name not in parameters
        )
        if missing:
            raise ValueError(f"a value is required for {', '.join(missing)}")
        if any(isinstance(v, datetime) and v.tzinfo is None for v in parameters.values()):
            raise ValueError("naive datetime: the store's times are aware")
        return values

    def rows(self, found: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        """The driver's rows as SQLAlchemy's would be: named, and their times as stored."""
        return [self.row(*as_stored(row)) for row in found]


MANY_ROWS = 64
"""Past this many rows a read made on the event loop is turned into the store's values on a
thread (`Database.select_here`, `tickets.history_here`): 25 to 45 µs an event, so a ticket's log
of 5,000 events would hold the loop for 128 to 231 ms (measured by the review)."""

# Weakly keyed: a statement built for one call leaves the cache with it.
_COMPILED: weakref.WeakKeyDictionary[Select[Any], dict[str, CompiledSelect]] = weakref.WeakKeyDictionary()


def compiled_for(statement: Select[Any], dialect: Dialect) -> CompiledSelect:
    """`statement` in `dialect`'s placeholders, with the values its literals bind (a `LIKE '/%'`
    pattern), compiled on first use. For statements built once, at module level (compiling costs
    milliseconds: one built per call gains nothing here)."""
    by_dialect = _COMPILED.setdefault(statement, {})
    found = by_dialect.get(dialect.name)
    if found is None:
        compiled = statement.compile(dialect=dialect)
        names = [str(column.key) for column in statement.selected_columns]
        row = namedtuple("Row", names, rename=True)  # type: ignore[misc]
        found = by_dialect[dialect.name] = CompiledSelect(str(compiled), dict(compiled.params), row)
    return found


def as_stored(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A driver's row with its times as the store's columns give them (`UTCDateTime`: aware, in
    UTC, whatever the session's time zone)."""
    return tuple(value.astimezone(UTC) if isinstance(value, datetime) else value for value in row)
