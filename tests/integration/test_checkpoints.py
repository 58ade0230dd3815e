"""The server's WAL checkpoints (`app.store.checkpoints`): taken by their own thread, none inside
a commit once it runs, and what was written is all in the database file after it stops."""

from __future__ import annotations

import asyncio
import sqlite3
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
    checkpoints.written()
    for _ in range(200):
        if checkpoints.checkpoints:
            break
        time.sleep(0.01)
    checkpoints.close()
    database.engine.raw_connection = real  # type: ignore[method-assign]
    database.close()
    assert checkpoints.failures == 1 and checkpoints.checkpoints >= 1
