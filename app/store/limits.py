"""GitHub's per-installation limits: the "wait until" pause and the spacing of content writes.

`MemoryLimits` keeps them in one process (the CLI, tests of the client alone);
`SharedLimits` keeps them in the database (`installation_limits`, a row per installation),
so every `serve` and `worker` process sharing it honours a Retry-After any of them saw,
and no two processes take the same content-write slot: a slot is claimed by one
conditional upsert, which only one transaction can win.
"""

from __future__ import annotations

from app.contracts.shared_ports import Limits, MemoryLimits
from app.store.database import Database
from app.store.tables import InstallationLimitRow, table

limits_table = table(InstallationLimitRow)
_PAUSE = f"SELECT paused_until FROM {limits_table.name} WHERE installation_id = ?"  # noqa: S608 - no input in it
__all__ = ["Limits", "MemoryLimits", "SharedLimits"]
APP = 0  # the row for calls made as the app itself (installation None)


_TAKE_SLOT = (
    f"INSERT INTO {limits_table.name} (installation_id, paused_until, next_content_write_at) "  # noqa: S608
    "VALUES (?, 0, ?) ON CONFLICT (installation_id) DO UPDATE SET next_content_write_at = "
    f"excluded.next_content_write_at WHERE {limits_table.name}.next_content_write_at <= ? "
    "RETURNING installation_id"
)
_NEXT_SLOT = f"SELECT next_content_write_at FROM {limits_table.name} WHERE installation_id = ?"  # noqa: S608
_TAKE_OR_SAY = f"WITH taken AS ({_TAKE_SLOT}) SELECT (SELECT count(*) FROM taken), ({_NEXT_SLOT})"  # noqa: S608
"""PostgreSQL: `_TAKE_SLOT`, and the slot that stood in its way, in one round trip. The read sees
the statement's snapshot, taken before the upsert waited on the row's lock: a slot another
process took meanwhile reads as free (or the row as missing), and is then at most `spacing`
away (`claim_write`)."""
_MOVE_PAUSE = (
    f"INSERT INTO {limits_table.name} (installation_id, paused_until, next_content_write_at) "  # noqa: S608
    "VALUES (?, ?, 0) ON CONFLICT (installation_id) DO UPDATE SET paused_until = "
    f"{{later}}({limits_table.name}.paused_until, excluded.paused_until)"
)


class SharedLimits:
    """The limits in the database, shared by every process on it. Each read and write is one
    statement, committed by itself, on PostgreSQL on the event loop (`Database.write_here`)."""

    def __init__(self, database: Database) -> None:
        self.database = database
        self._move_pause = _MOVE_PAUSE.format(later="max" if database.is_sqlite else "greatest")

    async def paused_until(self, installation_id: int | None, now: float) -> float | None:
        """When the installation's pause lifts, if one is in force at `now` (one primary-key read)."""
        row = await self.database.point_read_here(_PAUSE, (_row_id(installation_id),))
        until = None if row is None or row[0] is None else float(row[0])
        return until if until is not None and until > now else None

    async def pause(self, installation_id: int | None, until: float) -> None:
        """Move the installation's pause forward to `until` (never back): the row made or moved."""
        await self.database.write_here(self._move_pause, (_row_id(installation_id), until))

    async def claim_write(self, installation_id: int, now: float, spacing: float) -> float | None:
        """Take the next content-write slot atomically, or say when it frees up.

        The slot is taken by one upsert (the row made, or moved on if its slot is free): of two
        processes racing for one slot, the second's condition, checked again under the row's
        lock, is false, and nothing comes back.
        """
        row_id = _row_id(installation_id)
        if not self.database.is_sqlite:  # no INSERT in a WITH there
            slot = (row_id, now + spacing, now, row_id)
            [(taken, allowed)] = await self.database.write_here(_TAKE_OR_SAY, slot)
            if taken:
                return None
            return float(allowed) if allowed is not None and allowed > now else now + spacing
        if await self.database.write_here(_TAKE_SLOT, (row_id, now + spacing, now)):
            return None
        allowed = await self.database.point_read_here(_NEXT_SLOT, (row_id,))
        return float(allowed[0]) if allowed is not None else now


def _row_id(installation_id: int | None) -> int:
    return APP if installation_id is None else installation_id
