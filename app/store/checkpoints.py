"""SQLite's WAL checkpoints taken by a thread of their own, never inside a commit.

SQLite checkpoints in the connection whose commit takes the WAL past `wal_autocheckpoint` pages
(1,000: about 300 webhooks of 13 KB): that commit then also copies 4 MB into the database file
and fsyncs it, under the process's write lock, and every delivery waiting for a commit waits
for the copy too. In a server, no connection checkpoints on commit (`PRAGMA
wal_autocheckpoint=0`, set on each pooled connection once `start` has run, and on the intake
writer's own); this thread, on a connection of its own, takes a PASSIVE checkpoint (it waits for
no reader or writer; writers go on appending to the WAL) every `interval` seconds. A PASSIVE
checkpoint cannot start the WAL over while commits land during it, which under steady load is
always: once the WAL is past `restart_bytes`, the thread takes PASSIVE checkpoints again, each
copying what commits added during the last, until one finds little to copy (a pass takes a few
milliseconds by then), and only then a RESTART checkpoint with this process's writers held, so
the hold copies a few frames and syncs the database file (1 to 45 ms on the 2-core machine,
against 35 to 50 ms with a whole interval's frames left to it); `journal_size_limit` trims the
file past `WAL_SIZE_LIMIT`. Measured with `bench/intake.py` (docs/benchmarks.md).

Other processes (the CLI) keep SQLite's automatic checkpoints, and SQLite checkpoints when the
last connection closes. A checkpoint that fails (the database busy, a disk error) is logged at
most once a minute and tried again at the next interval: the WAL only grows meanwhile, and
nothing written is at risk.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

import structlog

from app.store.database import Database

log = structlog.get_logger(__name__)

INTERVAL = 1.0
"""Seconds between checkpoints (0.25 s measured slower under a flood: more, smaller copies)."""
RESTART_BYTES = 64 * 1024 * 1024
"""The WAL's size past which it is started over (the file keeps its size up to
`WAL_SIZE_LIMIT`, past which `journal_size_limit` trims it)."""
CATCH_UP_FRAMES = 256
"""A catch-up pass that copied at most this many frames (1 MB of 4 KB pages) leaves little
for the RESTART to copy while it holds the writers."""
CATCH_UP_PASSES = 4
"""Catch-up passes at most before the RESTART (each copies what the commits added during the
last: under a steady flood they shrink fast, a disk slower than the flood never catches up)."""
RESTART_WAIT_MS = 2_000
"""How long a RESTART waits for readers before it gives up until the next interval."""


class WalCheckpointer:
    """One thread and one connection that checkpoint the WAL every `interval` seconds, and start
    it over once it is past `restart_bytes`."""

    def __init__(
        self, database: Database, interval: float = INTERVAL, restart_bytes: int = RESTART_BYTES
    ) -> None:
        self._database, self._interval, self._restart_bytes = database, interval, restart_bytes
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.checkpoints = 0
        self.restarts = 0
        self.failures = 0
        self.held_frames = 0
        """The most frames a RESTART copied while it held the writers."""
        self._last_warning = 0.0

    def start(self) -> None:
        """Take over the checkpoints from every connection of the process, and start the thread."""
        self._database.background_checkpoints = True
        self._thread = threading.Thread(target=self._run, name="railyard-checkpoint", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Take a last checkpoint, then stop (blocking; call it from a thread)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        connection: Any = None
        while True:
            stopping = self._stop.wait(self._interval)
            try:
                if connection is None:
                    connection = self._connect()
                self._checkpoint(connection)
            except Exception as error:  # the thread goes on: the next interval tries again
                self.failures += 1
                if connection is not None:
                    with contextlib.suppress(Exception):
                        connection.close()
                    connection = None
                self._warn(error)
            if stopping:
                break
        if connection is not None:
            connection.close()

    def _connect(self) -> Any:
        connection = self._database.engine.raw_connection()
        connection.detach()
        connection.execute(f"PRAGMA busy_timeout={RESTART_WAIT_MS}")
        return connection

    def _checkpoint(self, connection: Any) -> None:
        """PASSIVE, beside the writers; when the WAL has grown past `restart_bytes` (commits
        during every checkpoint keep SQLite from starting it over), PASSIVE again until a pass
        finds little new to copy, then RESTART with this process's writers held: the hold then
        copies only what the last pass left (syncing the database file still takes 1 to 45 ms
        on the 2-core machine)."""
        _, frames, copied = self._passive(connection)
        page_size = connection.execute("PRAGMA page_size").fetchone()[0]
        if frames * page_size <= self._restart_bytes:
            return
        for _ in range(CATCH_UP_PASSES):
            before = copied
            _, _, copied = self._passive(connection)
            if copied - before <= CATCH_UP_FRAMES:
                break
        with self._database.writing(timeout=RESTART_WAIT_MS / 1000):  # else: the next interval
            busy, _, held = connection.execute("PRAGMA wal_checkpoint(RESTART)").fetchone()
        self.restarts += 0 if busy else 1
        self.held_frames = max(self.held_frames, held - copied)

    def _passive(self, connection: Any) -> tuple[int, int, int]:
        """(busy, frames in the WAL, frames copied into the database since the WAL started)."""
        busy, frames, copied = connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        self.checkpoints += 1
        return int(busy), int(frames), int(copied)

    def _warn(self, error: Exception) -> None:
        now = time.monotonic()
        if now - self._last_warning >= 60.0:
            self._last_warning = now
            log.warning(
                "WAL checkpoint failed; trying again", error=type(error).__name__, failures=self.failures
            )
