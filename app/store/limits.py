"""GitHub's per-installation limits: the "wait until" pause and the spacing of content writes.

`MemoryLimits` keeps them in one process (the CLI, tests of the client alone);
`SharedLimits` keeps them in the database (`installation_limits`, a row per installation),
so every `serve` and `worker` process sharing it honours a Retry-After any of them saw,
and no two processes take the same content-write slot: a slot is claimed by one
conditional upsert, which only one transaction can win.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, select

from app.contracts.shared_ports import Limits, MemoryLimits
from app.store.database import Database, dialect_insert, dialect_later
from app.store.hops import off_loop
from app.store.tables import InstallationLimitRow, table

limits_table = table(InstallationLimitRow)
_PAUSE = f"SELECT paused_until FROM {limits_table.name} WHERE installation_id = ?"  # noqa: S608 - no input in it
__all__ = ["Limits", "MemoryLimits", "SharedLimits"]
APP = 0  # the row for calls made as the app itself (installation None)


class SharedLimits:
    """The limits in the database, shared by every process on it."""

    def __init__(self, database: Database) -> None:
        self.database = database
        self._slot: Any = None  # the slot's upsert, built once for the database's dialect

    async def paused_until(self, installation_id: int | None, now: float) -> float | None:
        """When the installation's pause lifts, if one is in force at `now` (one primary-key read)."""
        row = await self.database.point_read_here(_PAUSE, (_row_id(installation_id),))
        until = None if row is None or row[0] is None else float(row[0])
        return until if until is not None and until > now else None

    async def pause(self, installation_id: int | None, until: float) -> None:
        """Move the installation's pause forward to `until` (never back)."""
        await off_loop(self._write_pause, _row_id(installation_id), until)

    async def claim_write(self, installation_id: int, now: float, spacing: float) -> float | None:
        """Take the next content-write slot atomically, or say when it frees up."""
        return await off_loop(self._claim, _row_id(installation_id), now, spacing)

    def _write_pause(self, row_id: int, until: float) -> None:
        insert = dialect_insert(self.database.engine.dialect.name)(limits_table)
        later = dialect_later(self.database.engine.dialect.name)
        with self.database.write_each() as connection:  # one statement: the row made or moved
            connection.execute(
                insert.values(
                    installation_id=row_id, paused_until=until, next_content_write_at=0.0
                ).on_conflict_do_update(
                    index_elements=["installation_id"],
                    set_={"paused_until": later(limits_table.c.paused_until, insert.excluded.paused_until)},
                )
            )

    def _claim(self, row_id: int, now: float, spacing: float) -> float | None:
        slot = {"b_id": row_id, "b_now": now, "b_next": now + spacing}
        with self.database.write_each() as connection:
            # The slot is taken by one upsert (the row made, or moved on if its slot is free),
            # its own transaction: of two processes racing for one slot, the second's
            # condition, checked again under the row's lock, is false, and nothing comes back.
            if connection.execute(self._take_slot(), slot).first() is not None:
                return None
            allowed = connection.execute(_NEXT_SLOT, slot).scalar_one()
        return float(allowed)

    def _take_slot(self) -> Any:
        if self._slot is None:
            insert = dialect_insert(self.database.engine.dialect.name)(limits_table)
            self._slot = (
                insert.values(installation_id=bindparam("b_id"), paused_until=0.0)
                .values(next_content_write_at=bindparam("b_next"))
                .on_conflict_do_update(
                    index_elements=["installation_id"],
                    set_={"next_content_write_at": insert.excluded.next_content_write_at},
                    where=limits_table.c.next_content_write_at <= bindparam("b_now"),
                )
                .returning(limits_table.c.installation_id)
            )
        return self._slot


_NEXT_SLOT = select(limits_table.c.next_content_write_at).where(
    limits_table.c.installation_id == bindparam("b_id")
)


def _row_id(installation_id: int | None) -> int:
    return APP if installation_id is None else installation_id
