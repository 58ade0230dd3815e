"""A delivery that fails transiently on every try is marked failed, visibly, after the last one."""

from __future__ import annotations

import asyncio
from pathlib import Path

from app.bootstrap import wire
from app.runtime.metrics import Metrics
from app.store.intake import IncomingDelivery, write_batch
from app.store.queue_admin import list_deliveries
from handlers.errors import TransientError
from handlers.ports import Services
from handlers.routing import Router, WebhookEvent
from tests.conftest import sqlite_database

NOW = 1_800_000_000.0


class LeapingClock:
    """A clock that moves on ten minutes each time it is read, so every retry is due at once."""

    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        self.now += 600.0
        return self.now


async def test_a_delivery_failing_on_every_try_is_failed_after_the_last_with_its_error(
    tmp_path: Path,
) -> None:
    """GitHub away for good: the delivery is tried max_attempts times, then `failed` with "gave up"."""
    database = sqlite_database(tmp_path / "railyard.db")
    router, tries = Router(), []

    @router.register("issues", "edited")
    async def unavailable(event: WebhookEvent, services: Services) -> None:
        tries.append(event.delivery_id)
        raise TransientError("GitHub answered 502")

    # The clock leaps ten minutes a read: a lease shorter than that would lapse between the claim
    # and the outcome, and the worker would claim its own live delivery again.
    worker = wire(database, clock=LeapingClock()).worker(
        router, Metrics(), poll_seconds=0.01, lease_seconds=1e6
    )
    payload = '{"action": "edited"}'
    write_batch(
        database,
        [IncomingDelivery("d1", "issues", "edited", None, None, "k", "pending", payload, 2, NOW, NOW)],
    )
    stop = asyncio.Event()
    running = asyncio.create_task(worker.run(stop))
    for _ in range(2000):
        [delivery] = list_deliveries(database)
        if delivery["status"] == "failed":
            break
        await asyncio.sleep(0.01)
    stop.set()
    await running
    database.close()

    assert delivery["status"] == "failed" and len(tries) == worker.retry.max_attempts == 32
    assert "gave up after 32 attempts" in delivery["last_error"] and "502" in delivery["last_error"]


async def test_a_delivery_whose_runs_never_record_an_outcome_is_failed_after_the_last_try(
    tmp_path: Path,
) -> None:
    """A delivery that kills its worker (or loses its lease) on every run records no outcome, so
    no retry counts against it: at the try past the last it is failed, visibly, without running
    its handlers again, and the ticket's next delivery is processed (it was held back for ever)."""
    database = sqlite_database(tmp_path / "railyard.db")
    router, tries = Router(), []

    @router.register("issues", "edited")
    async def record(event: WebhookEvent, services: Services) -> None:
        tries.append(event.delivery_id)

    payload = '{"action": "edited"}'
    write_batch(
        database,
        [
            IncomingDelivery("poison", "issues", "edited", None, None, "k", "pending", payload, 2, NOW, NOW),
            IncomingDelivery("next", "issues", "edited", None, None, "k", "pending", payload, 2, NOW, NOW),
        ],
    )
    clock = [NOW]
    worker = wire(database, clock=lambda: clock[0]).worker(
        router, Metrics(), poll_seconds=0.01, lease_seconds=60.0
    )
    # Each claim is a run that died before its outcome: its lease runs out before the next.
    for _ in range(worker.retry.max_attempts):
        [claimed] = worker.queue.claim(clock[0], 1)
        assert claimed.delivery_id == "poison"
        clock[0] += 61.0
    stop = asyncio.Event()
    running = asyncio.create_task(worker.run(stop))
    for _ in range(500):
        if len(list_deliveries(database, status="done")) == 1:
            break
        await asyncio.sleep(0.01)
    stop.set()
    await running
    statuses = {row["delivery_id"]: row for row in list_deliveries(database)}
    database.close()

    assert statuses["poison"]["status"] == "failed" and tries == ["next"]
    assert "no outcome recorded in 32 tries" in statuses["poison"]["last_error"]
    assert statuses["next"]["status"] == "done"
