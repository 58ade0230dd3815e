"""The worker loop: wake-ups under a burst, and queue bookkeeping that does not wait for the disk."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import select, update

from app.bootstrap import wire
from app.contracts.effect_types import comment
from app.runtime.metrics import Metrics
from app.store.database import Database
from app.store.effects import enqueue
from app.store.intake import IncomingDelivery, write_batch
from app.store.queue import ClaimedDelivery, DeliveryQueue, deliveries, runs
from app.store.queue_admin import list_deliveries
from handlers.ports import Services
from handlers.routing import Router, WebhookEvent
from tests.conftest import sqlite_database

NOW = 1_800_000_000.0


def edited(delivery_id: str, key: str) -> IncomingDelivery:
    """A stored `issues.edited` delivery, its ticket's order given by `key`."""
    payload = '{"action": "edited"}'
    return IncomingDelivery(delivery_id, "issues", "edited", None, None, key, "pending", payload, 2, NOW, NOW)


def recording_router() -> tuple[Router, list[str]]:
    """A router whose one handler notes the id of every `issues.edited` delivery it runs."""
    router = Router()
    seen: list[str] = []

    @router.register("issues", "edited")
    async def record(event: WebhookEvent, services: Services) -> None:
        seen.append(event.delivery_id)

    return router, seen


class CountingQueue(DeliveryQueue):
    """The real queue, counting how often the worker looks at it (on the loop or on a thread)."""

    claims = 0

    def claim(self, now: float, limit: int) -> list[ClaimedDelivery]:
        self.claims += 1
        return super().claim(now, limit)

    def claim_here(self, now: float, limit: int) -> list[ClaimedDelivery]:
        claimed = super().claim_here(now, limit)  # NotNowError: not a look; the claim on a thread is
        self.claims += 1
        return claimed


async def test_a_burst_of_notices_does_not_become_a_query_per_delivery(tmp_path: Path) -> None:
    """2,000 stored-delivery notices in 200 rounds: the queue is looked at once per claim gap."""
    database = sqlite_database(tmp_path / "railyard.db")
    worker = wire(database).worker(Router(), Metrics(), poll_seconds=5.0, claim_gap_seconds=0.05)
    queue = CountingQueue(database, owner=worker.name)
    worker.queue = queue
    stop = asyncio.Event()
    running = asyncio.create_task(worker.run(stop))
    started = time.monotonic()
    for _ in range(200):
        for _ in range(10):
            worker.notify()
        await asyncio.sleep(0.001)
    elapsed = time.monotonic() - started
    stop.set()
    worker.notify()
    await running
    database.close()

    # Without the gap the worker looks once per round (about 200 times).
    assert 1 <= queue.claims <= elapsed / 0.05 + 3 and queue.claims < 100, (queue.claims, elapsed)


async def test_stored_deliveries_are_picked_up_at_once_after_a_notice(tmp_path: Path) -> None:
    database = sqlite_database(tmp_path / "railyard.db")
    router, seen = recording_router()
    worker = wire(database, clock=lambda: NOW).worker(router, Metrics(), poll_seconds=5.0)
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


async def test_while_the_intake_is_saturated_the_worker_takes_work_less_often_but_still_takes_it(
    tmp_path: Path,
) -> None:
    database = sqlite_database(tmp_path / "railyard.db")
    router, seen = recording_router()
    write_batch(database, [edited(f"d{n}", f"k{n}") for n in range(40)])
    saturated = True
    worker = wire(database, clock=lambda: NOW).worker(
        router,
        Metrics(),
        concurrency=1,
        intake_busy=lambda: saturated,
        yield_seconds=0.1,
    )
    stop = asyncio.Event()
    running = asyncio.create_task(worker.run(stop))
    await asyncio.sleep(0.55)
    under_flood = len(seen)
    saturated = False
    for _ in range(200):
        if len(seen) == 40:
            break
        await asyncio.sleep(0.01)
    stop.set()
    worker.notify()
    await running
    database.close()

    assert 1 <= under_flood <= 7, "one claim per 0.1 s yield, never none"
    assert sorted(seen) == sorted(f"d{n}" for n in range(40))


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
    database = sqlite_database(tmp_path / "railyard.db")
    try:
        with pytest.raises(RuntimeError), database.bookkeeping() as cursor:
            cursor.execute("BEGIN IMMEDIATE")
            cursor.execute(
                "INSERT INTO installations (id, account, status, updated_at) VALUES (1, 'a', 'on', 0)"
            )
            raise RuntimeError("handler blew up")
        with database.bookkeeping() as cursor:
            assert cursor.execute("SELECT count(*) FROM installations").fetchone()[0] == 0
            assert not cursor.connection.in_transaction
    finally:
        database.close()


async def test_a_delivery_whose_handler_runs_past_its_lease_is_not_taken_over(tmp_path: Path) -> None:
    """While its handler runs the worker renews the lease: another worker cannot claim it, however long."""
    database = sqlite_database(tmp_path / "railyard.db")
    release, started = asyncio.Event(), asyncio.Event()
    router = Router()

    @router.register("issues", "edited")
    async def slow(event: WebhookEvent, services: Services) -> None:
        started.set()
        await release.wait()

    began = time.monotonic()

    def clock() -> float:  # the stored delivery's time, moving with the wall clock
        return NOW + time.monotonic() - began

    services = wire(database, clock=clock)
    worker = services.worker(router, Metrics(), lease_seconds=0.3, poll_seconds=0.05)
    stop = asyncio.Event()
    running = asyncio.create_task(worker.run(stop))
    write_batch(database, [edited("long", "k")])
    worker.notify()
    await asyncio.wait_for(started.wait(), 10)
    other = DeliveryQueue(database, owner="another-process", lease_seconds=0.3)
    taken = []
    for _ in range(10):  # five leases' worth of time
        await asyncio.sleep(0.15)
        taken += await asyncio.to_thread(other.claim, clock(), 10)
    release.set()
    stop.set()
    await running
    database.close()

    assert taken == []


async def test_a_handler_whose_lease_was_taken_over_is_stopped_and_records_no_outcome(tmp_path: Path) -> None:
    """Another claim took the lease (this process was paused past it): the next renewal finds it lost, the
    handlers are cancelled before they finish, and no outcome of theirs is recorded over the new holder's."""
    database = sqlite_database(tmp_path / "railyard.db")
    started, stopped, finished = asyncio.Event(), asyncio.Event(), []
    router = Router()

    @router.register("issues", "edited")
    async def slow(event: WebhookEvent, services: Services) -> None:
        started.set()
        try:
            await asyncio.sleep(30)
            finished.append(event.delivery_id)
        except asyncio.CancelledError:
            stopped.set()
            raise

    worker = wire(database, clock=lambda: NOW).worker(router, Metrics(), lease_seconds=0.3, poll_seconds=0.05)
    stop = asyncio.Event()
    running = asyncio.create_task(worker.run(stop))
    write_batch(database, [edited("taken", "k")])
    worker.notify()
    await asyncio.wait_for(started.wait(), 10)
    with database.write() as connection:  # what another worker's claim of the lapsed lease writes
        connection.execute(
            update(deliveries).values(lease_owner="another-process", attempts=deliveries.c.attempts + 1)
        )
    await asyncio.wait_for(stopped.wait(), 5)
    stop.set()
    await running
    with database.read() as connection:
        recorded = connection.execute(select(runs.c.worker)).all()
        [row] = connection.execute(select(deliveries.c.status, deliveries.c.lease_owner)).all()
    database.close()

    assert finished == [] and recorded == []
    assert (row.status, row.lease_owner) == ("pending", "another-process")


async def test_a_payload_that_cannot_be_decoded_fails_its_delivery_and_the_worker_goes_on(
    tmp_path: Path,
) -> None:
    """A stored payload that is not JSON is marked failed with the error; the next delivery is processed."""
    database = sqlite_database(tmp_path / "railyard.db")
    router, seen = recording_router()
    worker = wire(database, clock=lambda: NOW).worker(router, Metrics(), poll_seconds=0.05)
    broken = edited("broken", "k1")._replace(payload="{not json")
    write_batch(database, [broken, edited("fine", "k2")])
    stop = asyncio.Event()
    running = asyncio.create_task(worker.run(stop))
    for _ in range(200):
        statuses = {d["delivery_id"]: d["status"] for d in list_deliveries(database)}
        if set(statuses.values()) <= {"done", "failed"}:
            break
        await asyncio.sleep(0.02)
    stop.set()
    await running
    failed = [d for d in list_deliveries(database) if d["status"] == "failed"]
    database.close()

    assert statuses == {"broken": "failed", "fine": "done"} and seen == ["fine"]
    assert "JSONDecodeError" in (failed[0]["last_error"] or "")


async def test_the_outbox_is_told_only_after_a_delivery_that_enqueued_effects(tmp_path: Path) -> None:
    """An event that changed nothing costs the outbox no look; one that enqueued a write tells
    it at once (the effect is due now), through the unit's thread."""
    database = sqlite_database(tmp_path / "railyard.db")
    router = Router()

    @router.register("issues", "edited")
    async def maybe_enqueue(event: WebhookEvent, services: Services) -> None:
        if event.delivery_id == "writes":
            await asyncio.to_thread(_enqueue_one, database)

    told: list[float] = []
    worker = wire(database, clock=lambda: NOW).worker(router, Metrics(), poll_seconds=5.0)
    worker.processed = lambda: told.append(time.monotonic())
    stop = asyncio.Event()
    running = asyncio.create_task(worker.run(stop))
    write_batch(database, [edited("quiet", "a")])
    worker.notify()
    await _until(lambda: len(list_deliveries(database, "done")) == 1)
    assert told == []
    write_batch(database, [edited("writes", "b")])
    worker.notify()
    await _until(lambda: bool(told))
    stop.set()
    await running
    database.close()
    assert len(told) == 1


def _enqueue_one(database: Database) -> None:
    with database.write() as connection:
        enqueue(connection, [comment(7, "acme/web", 12, "hello", "c-1")], NOW)


async def _until(condition: Callable[[], bool]) -> None:
    for _ in range(300):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("not within 3 s")
