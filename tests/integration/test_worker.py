"""The worker loop: wake-ups under a burst, and queue bookkeeping that does not wait for the disk."""

from __future__ import annotations

import asyncio
from pathlib import Path

from app.database import Database
from app.intake import IncomingDelivery, write_batch
from app.metrics import Metrics
from app.queue import ClaimedDelivery, DeliveryQueue
from app.services import create_services
from app.worker import Worker
from handlers.routing import Router
from tests.conftest import sqlite_database

NOW = 1_800_000_000.0


def edited(delivery_id: str, key: str) -> IncomingDelivery:
    """A stored `issues.edited` delivery, its ticket's order given by `key`."""
    payload = '{"action": "edited"}'
    return IncomingDelivery(delivery_id, "issues", "edited", None, None, key, "pending", payload, 2, NOW, NOW)


class CountingQueue(DeliveryQueue):
    """The real queue, counting how often the worker looks at it."""

    claims = 0

    def claim(self, now: float, limit: int) -> list[ClaimedDelivery]:
        self.claims += 1
        return super().claim(now, limit)


async def test_a_burst_of_notices_does_not_become_a_query_per_delivery(tmp_path: Path) -> None:
    """2,000 stored-delivery notices in a second: the queue is looked at about once per 10 ms."""
    database = sqlite_database(tmp_path / "railyard.db")
    worker = Worker(create_services(database), Router(), Metrics(), poll_seconds=5.0)
    queue = CountingQueue(database, owner=worker.name)
    worker.queue = queue
    stop = asyncio.Event()
    running = asyncio.create_task(worker.run(stop))
    for _ in range(200):
        for _ in range(10):
            worker.notify()
        await asyncio.sleep(0.005)
    stop.set()
    worker.notify()
    await running
    database.close()

    assert 20 <= queue.claims <= 150, queue.claims


async def test_stored_deliveries_are_picked_up_at_once_after_a_notice(tmp_path: Path) -> None:
    database = sqlite_database(tmp_path / "railyard.db")
    router = Router()
    seen: list[str] = []

    @router.register("issues", "edited")
    async def record(event, services) -> None:  # type: ignore[no-untyped-def]
        seen.append(event.delivery_id)

    worker = Worker(create_services(database, clock=lambda: NOW), router, Metrics(), poll_seconds=5.0)
    stop = asyncio.Event()
    running = asyncio.create_task(worker.run(stop))
    await asyncio.sleep(0.05)
    write_batch(database, [edited("d1", "k")])
    worker.notify()
    for _ in range(100):
        if seen:
            break
        await asyncio.sleep(0.01)
    stop.set()
    await running
    database.close()

    assert seen == ["d1"], "processed well before the 5 s poll"


def test_queue_bookkeeping_skips_the_fsync_and_everything_else_keeps_it(tmp_path: Path) -> None:
    database = sqlite_database(tmp_path / "railyard.db")
    try:
        with database.bookkeeping() as cursor:
            bookkeeping = cursor.execute("PRAGMA synchronous").fetchone()[0]
        with database.write() as connection:
            ordinary = connection.exec_driver_sql("PRAGMA synchronous").scalar()
        raw = database.engine.raw_connection()
        intake = raw.cursor().execute("PRAGMA synchronous").fetchone()[0]
        raw.close()
    finally:
        database.close()

    normal, full = 1, 2
    assert (bookkeeping, ordinary, intake) == (normal, full, full)


def test_a_failed_bookkeeping_transaction_is_rolled_back(tmp_path: Path) -> None:
    database: Database = sqlite_database(tmp_path / "railyard.db")
    try:
        try:
            with database.bookkeeping() as cursor:
                cursor.execute("BEGIN IMMEDIATE")
                cursor.execute(
                    "INSERT INTO installations (id, account, status, updated_at) VALUES (1, 'a', 'active', 0)"
                )
                raise RuntimeError("handler blew up")
        except RuntimeError:
            pass
        with database.bookkeeping() as cursor:
            assert cursor.execute("SELECT count(*) FROM installations").fetchone()[0] == 0
            assert not database._bookkeeper.dbapi_connection.in_transaction
    finally:
        database.close()


async def test_while_the_intake_is_saturated_the_worker_takes_work_less_often_but_still_takes_it(
    tmp_path: Path,
) -> None:
    database = sqlite_database(tmp_path / "railyard.db")
    router = Router()
    seen: list[str] = []

    @router.register("issues", "edited")
    async def record(event, services) -> None:  # type: ignore[no-untyped-def]
        seen.append(event.delivery_id)

    payload = '{"action": "edited"}'
    write_batch(
        database,
        [
            IncomingDelivery(
                f"d{n}", "issues", "edited", None, None, f"k{n}", "pending", payload, 2, NOW, NOW
            )
            for n in range(40)
        ],
    )
    worker = Worker(
        create_services(database, clock=lambda: NOW),
        router,
        Metrics(),
        concurrency=1,
        intake_busy=lambda: True,
        yield_seconds=0.1,
    )
    stop = asyncio.Event()
    running = asyncio.create_task(worker.run(stop))
    await asyncio.sleep(0.55)
    under_flood = len(seen)
    worker.intake_busy = lambda: False
    for _ in range(200):
        if len(seen) == 40:
            break
        await asyncio.sleep(0.01)
    stop.set()
    worker.notify()
    await running
    database.close()

    assert 3 <= under_flood <= 7, under_flood
    assert sorted(seen) == sorted(f"d{n}" for n in range(40))
