"""The server's WAL checkpoints (`app.store.checkpoints`): taken by their own thread, none inside
a commit once it runs, and what was written is all in the database file after it stops."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from app.store.checkpoints import WalCheckpointer
from app.store.database import Database
from app.store.intake import DeliveryWriter, IncomingDelivery
from support.databases import sqlite_database


def _delivery(n: int) -> IncomingDelivery:
    body = '{"zen": "' + "x" * 13_000 + '"}'
    return IncomingDelivery(f"d{n}", "ping", None, None, None, None, "ignored", body, len(body), 0.0, 0.0)


def _autocheckpoint(database: Database) -> int:
    with database.engine.connect() as connection:
        return int(connection.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar_one())


@pytest.mark.asyncio
async def test_a_server_checkpoints_on_its_own_thread_and_commits_never_do(tmp_path: Path) -> None:
    database = sqlite_database(tmp_path / "railyard.db")
    assert _autocheckpoint(database) == 1000  # SQLite's default, before a server starts
    writer = DeliveryWriter(database)
    await writer.start()
    try:
        assert database.background_checkpoints
        assert _autocheckpoint(database) == 0  # a pooled connection, checked out again
        stored = await asyncio.gather(*(writer.store(_delivery(n)) for n in range(400)))
        assert all(stored)
        checkpoints = writer._checkpoints
        assert checkpoints is not None
        for _ in range(100):
            if checkpoints.checkpoints:
                break
            await asyncio.sleep(0.05)
        assert checkpoints.checkpoints >= 1 and checkpoints.failures == 0
    finally:
        await writer.close()
    database.close()
    with sqlite3.connect(tmp_path / "railyard.db") as plain:
        assert plain.execute("SELECT count(*) FROM webhook_deliveries").fetchone()[0] == 400


def test_a_failed_checkpoint_is_counted_and_the_thread_goes_on(tmp_path: Path) -> None:
    database = sqlite_database(tmp_path / "railyard.db")
    checkpoints = WalCheckpointer(database, interval=0.01)
    broken = [True]
    real = database.engine.raw_connection

    def connect() -> object:
        if broken[0]:
            broken[0] = False
            raise sqlite3.OperationalError("disk I/O error")
        return real()

    database.engine.raw_connection = connect  # type: ignore[method-assign]
    checkpoints.start()
    for _ in range(200):
        if checkpoints.checkpoints:
            break
        time.sleep(0.01)
    checkpoints.close()
    database.engine.raw_connection = real  # type: ignore[method-assign]
    database.close()
    assert checkpoints.failures == 1 and checkpoints.checkpoints >= 1


def test_under_steady_writes_the_wal_is_started_over_and_stays_bounded(tmp_path: Path) -> None:
    """Commits land during every PASSIVE checkpoint, so SQLite never starts the WAL over by
    itself: past the limit the checkpointer does, with the process's writers held."""
    database = sqlite_database(tmp_path / "railyard.db")
    checkpoints = WalCheckpointer(database, interval=0.02, restart_bytes=2 * 1024 * 1024)
    checkpoints.start()
    stop = threading.Event()
    body = "x" * 13_000

    def write(writer: int) -> None:
        n = 0
        while not stop.is_set():
            n += 1
            with database.write() as connection:
                connection.exec_driver_sql(
                    "INSERT INTO webhook_deliveries (delivery_id, event, status, payload, "
                    "payload_bytes, received_at, attempts, next_attempt_at) "
                    "VALUES (?, 'ping', 'ignored', ?, 13000, 0, 0, 0)",
                    (f"w{writer}-{n}", body),
                )

    writers = [threading.Thread(target=write, args=(writer,)) for writer in range(2)]
    for thread in writers:
        thread.start()
    time.sleep(1.5)
    stop.set()
    for thread in writers:
        thread.join()
    wal_pages = None
    with database.engine.connect() as connection:
        wal_pages = connection.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)").one()[1]
    checkpoints.close()
    database.close()
    assert checkpoints.restarts >= 1 and checkpoints.failures == 0
    assert wal_pages * 4096 < 8 * 1024 * 1024, "the WAL kept growing"
