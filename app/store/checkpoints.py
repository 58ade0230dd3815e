"""SQLite's WAL checkpoints taken by a thread of their own, never inside a commit.

SQLite checkpoints in the connection whose commit takes the WAL past `wal_autocheckpoint` pages
(1,000: about 300 webhooks of 13 KB): that commit then also copies 4 MB into the database file
and fsyncs it, under the process's write lock, and every delivery waiting for a commit waits
for the copy too. In a server, no connection checkpoints on commit (`PRAGMA
wal_autocheckpoint=0`, set on each pooled connection once `start` has run, and on the intake
writer's own); this thread, on a connection of its own, takes a PASSIVE checkpoint (it waits for
no reader or writer; writers go on appending to the WAL) every `interval` seconds in which
anything may have been written. Measured with `bench/intake.py` (docs/benchmarks.md).

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
"""Seconds between checkpoints while the intake writes: at 5,000 deliveries of 13 KB a second
the WAL reaches about 65 MB before each (0.25 s measured slower: more, smaller copies)."""


class WalCheckpointer:
    """One thread and one connection that checkpoint the WAL after the intake writes."""

    def __init__(self, database: Database, interval: float = INTERVAL) -> None:
        self._database, self._interval = database, interval
        self._written = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self.checkpoints = 0
        self.failures = 0
        self._last_warning = 0.0

    def start(self) -> None:
        """Take over the checkpoints from every connection of the process, and start the thread."""
        self._database.background_checkpoints = True
        self._thread = threading.Thread(target=self._run, name="railyard-checkpoint", daemon=True)
        self._thread.start()

    def written(self) -> None:
        """The intake committed a batch: a checkpoint is due within `interval` seconds."""
        self._written.set()

    def close(self) -> None:
        """Take a last checkpoint of what was written, then stop (blocking; call it from a thread)."""
        self._stopping = True
        self._written.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        connection: Any = None
        while True:
            # The intake's batches wake it; the worker's and the loops' writes are caught by
            # the timeout. Writes meanwhile share the checkpoint.
            self._written.wait(timeout=self._interval)
            if not self._stopping:
                time.sleep(self._interval)
            self._written.clear()
            try:
                if connection is None:
                    connection = self._database.engine.raw_connection()
                    connection.detach()
                connection.cursor().execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                self.checkpoints += 1
            except Exception as error:  # the thread goes on: the next batch tries again
                self.failures += 1
                if connection is not None:
                    with contextlib.suppress(Exception):
                        connection.close()
                    connection = None
                self._warn(error)
            if self._stopping:
                break
        if connection is not None:
            connection.close()

    def _warn(self, error: Exception) -> None:
        now = time.monotonic()
        if now - self._last_warning >= 60.0:
            self._last_warning = now
            log.warning(
                "WAL checkpoint failed; trying again", error=type(error).__name__, failures=self.failures
            )
