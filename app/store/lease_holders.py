"""Which processes may hold leases on a SQLite file (`LeaseHolders`).

A server that starts on SQLite frees every lease still held (deliveries and GitHub writes), so
what a killed server was doing is taken over at once instead of after its leases run out. That
is right only if no other live process holds any: a `railyard worker` run beside it on the same
file, or the previous server still stopping while the next one starts. Freed from under a live
holder, a GitHub write it has sent would be sent again (a second comment), and a delivery it is
running would run twice. So each process that takes leases on a SQLite file holds a shared
`flock` on `<database>-leases.lock` for as long as it runs (the kernel lets go of it when the
process dies), and a server frees the leases at start only when it could take that lock
exclusively first: no other live process held it. Otherwise the leases run out as on PostgreSQL.
"""

from __future__ import annotations

import contextlib
import fcntl
import os

import structlog

from app.store.database import Database
from app.store.write_lock import sqlite_path

log = structlog.get_logger(__name__)


class LeaseHolders:
    """This process's place among the processes holding leases on one SQLite file."""

    def __init__(self, database: Database) -> None:
        self._file: int | None = None
        path = sqlite_path(database.url) if database.is_sqlite else None
        if path:
            try:
                self._file = os.open(path + "-leases.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            except OSError as error:
                log.warning("no lease-holders lock file beside the database", error=error.strerror)

    def join(self) -> bool:
        """Hold the lock, shared, until `leave`; True when no other live process held it (so any
        lease still held is a dead process's). Without a lock file: True, as before it existed."""
        if self._file is None:
            return True
        try:
            fcntl.flock(self._file, fcntl.LOCK_EX | fcntl.LOCK_NB)
            alone = True
        except BlockingIOError:
            alone = False
        fcntl.flock(self._file, fcntl.LOCK_SH)  # another's exclusive hold is only ever this check
        return alone

    def leave(self) -> None:
        """Let go of the lock (this process takes no more leases)."""
        if self._file is not None:
            with contextlib.suppress(OSError):
                os.close(self._file)
            self._file = None
