"""PostgreSQL advisory locks held for a transaction: one transaction at a time per name.

SQLite needs none (it has one writer at a time). On PostgreSQL two transactions that each read
what the other is about to write (count an account's rows, then trim them) would each miss the
other's uncommitted row; the lock makes the second wait for the first to commit, and what it reads
after the lock is what the first committed (READ COMMITTED reads as of each statement).
"""

from __future__ import annotations

import hashlib

from sqlalchemy import Connection, text

_LOCK = text("SELECT pg_advisory_xact_lock(:key)")


def lock_key(name: str) -> int:
    """The 64-bit key of the lock named `name` (its sha256's first eight bytes, signed)."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


def one_at_a_time(connection: Connection, name: str) -> None:
    """On PostgreSQL, wait for and hold the transaction's lock named `name`; nothing on SQLite."""
    if connection.dialect.name == "postgresql":
        connection.execute(_LOCK, {"key": lock_key(name)})
