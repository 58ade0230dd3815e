"""One writer at a time on a SQLite file, across threads and processes (`WriteLock`)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager

import structlog
from sqlalchemy import make_url
from sqlalchemy.exc import OperationalError

log = structlog.get_logger(__name__)

BUSY_TIMEOUT_S = 30.0
"""How long another process's hold is waited for by default (SQLite's busy timeout in railyard)."""


def sqlite_path(url: str) -> str | None:
    """The file a SQLite URL names (None for an in-memory database)."""
    path = make_url(url).database
    return path if path and path != ":memory:" else None


class WriteLock:
    """One writer at a time on a SQLite file, across the threads of this process and across the
    processes that share the file (the intake's writer process among them).

    A reentrant lock for this process's threads; the outermost holder also takes an exclusive
    `flock` on `<database>-writer.lock`, beside the file. A writer that finds another
    process's commit under way tries again after 20 µs, doubling up to 1 ms, where SQLite's
    own busy handler sleeps 1, 2, 5, 10... ms between tries; past `timeout` it fails as SQLite
    would (`database is locked`), so a process that hangs holding the lock stalls no one for
    good. Without a lock file (an in-memory database, or a directory that cannot take one:
    logged) it is this process's lock alone, and other processes meet SQLite's busy timeout.
    """

    def __init__(self, database_path: str | None, timeout: float = BUSY_TIMEOUT_S) -> None:
        self._threads = threading.RLock()
        self._depth = 0
        self._timeout = timeout
        self._file: int | None = None
        if database_path:
            try:
                flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC
                self._file = os.open(database_path + "-writer.lock", flags, 0o600)
            except OSError as error:
                log.warning(
                    "no write lock file beside the database; other processes wait on SQLite's busy timeout",
                    error=error.strerror,
                )
        # A lock never closed (a Database dropped without close()) still gives its file back.
        self._finalizer = weakref.finalize(self, _close_quietly, self._file)

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        """Take the lock; False, taking nothing, when `blocking` is False and it is held.

        Blocking, the lock is waited for at most `timeout` seconds (the lock's own by default),
        another thread's hold and another process's together, then `OperationalError`
        (database is locked)."""
        deadline = time.monotonic() + (self._timeout if timeout is None else timeout)
        if not blocking:
            if not self._threads.acquire(blocking=False):
                return False
        elif not self._threads.acquire(timeout=max(0.0, deadline - time.monotonic())):
            raise _locked("another thread of this process writes")
        if self._depth == 0 and self._file is not None:
            try:
                taken = self._take_file(blocking, deadline)
            except BaseException:
                self._threads.release()
                raise
            if not taken:
                self._threads.release()
                if blocking:
                    raise _locked("another process writes")
                return False
        self._depth += 1
        return True

    def _take_file(self, blocking: bool, deadline: float) -> bool:
        assert self._file is not None
        pause = 20e-6
        while True:
            try:
                fcntl.flock(self._file, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                if not blocking or time.monotonic() >= deadline:
                    return False
            time.sleep(pause)
            pause = min(pause * 2, 1e-3)

    def release(self) -> None:
        """Give back one hold; the last one lets the other processes in."""
        self._depth -= 1
        if self._depth == 0 and self._file is not None:
            fcntl.flock(self._file, fcntl.LOCK_UN)
        self._threads.release()

    def __enter__(self) -> WriteLock:
        self.acquire()
        return self

    def __exit__(self, *_: object) -> None:
        self.release()

    @contextmanager
    def held(self, timeout: float) -> Iterator[None]:
        """The lock for a block, another process's hold waited for at most `timeout` seconds."""
        self.acquire(timeout=timeout)
        try:
            yield
        finally:
            self.release()

    def close(self) -> None:
        """Close the lock file, once no thread of this process holds the lock."""
        with self._threads:
            self._finalizer()
            self._file = None


def _locked(who: str) -> OperationalError:
    return OperationalError("write lock", {}, sqlite3.OperationalError(f"database is locked ({who})"))


def _close_quietly(file: int | None) -> None:
    if file is not None:
        with contextlib.suppress(OSError):
            os.close(file)
