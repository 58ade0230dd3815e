"""SQLAlchemy statements compiled once per dialect, for the driver's own connections: the store
writes each statement once, with SQLAlchemy, and a read that runs where SQLAlchemy's execution
would cost more than the statement (the event loop's connections, `Database.select_here`) takes
its compiled text and the values of its own literals from here."""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Dialect
from sqlalchemy.sql import Executable

_COMPILED: dict[tuple[Executable, str], tuple[str, dict[str, Any]]] = {}


def compiled_for(statement: Executable, dialect: Dialect) -> tuple[str, dict[str, Any]]:
    """`statement`'s SQL in `dialect`'s placeholders and the values its literals bind (a `LIKE
    '/%'` pattern), compiled on first use. For statements built once, at module level: each
    stays in the cache for the life of the process."""
    key = (statement, dialect.name)
    found = _COMPILED.get(key)
    if found is None:
        compiled = statement.compile(dialect=dialect)  # type: ignore[attr-defined]
        found = _COMPILED[key] = (str(compiled), dict(compiled.params))
    return found
