"""A finished delivery leases its ordering key's next one in the same transaction (SQLite): a run
of one ticket's or one commit's deliveries costs no claim each, and nothing else changes: the
order, the backoff, another worker's lease, and how long another ticket waits."""

from __future__ import annotations

import asyncio
from pathlib import Path

from sqlalchemy import select

from app.bootstrap import wire
from app.runtime.metrics import Metrics
from app.runtime.worker import CHAINED_AT_MOST
from app.store.database import Database
from app.store.delivery_status import DONE
from app.store.intake import IncomingDelivery, write_batch
from app.store.queue import ClaimedDelivery, DeliveryQueue, deliveries, runs
from handlers.ports import Services
from handlers.routing import Router, WebhookEvent
from tests.conftest import sqlite_database

NOW = 1_800_000_000.0


def pending(delivery_id: str, key: str | None, received_at: float = NOW) -> IncomingDelivery:
    """A stored `issues.edited` delivery waiting for the worker, ordered among its key's."""
    payload = '{"action": "edited"}'
    return IncomingDelivery(
        delivery_id, "issues", "edited", None, None, key, "pending", payload, 2, received_at, received_at
    )


def leases(database: Database) -> dict[str, tuple[str | None, int]]:
    """Each delivery's lease holder and attempts."""
    with database.read() as connection:
        rows = connection.execute(
            select(deliveries.c.delivery_id, deliveries.c.lease_owner, deliveries.c.attempts)
        ).all()
    return {row.delivery_id: (row.lease_owner, row.attempts) for row in rows}


async def finish(queue: DeliveryQueue, claimed: ClaimedDelivery, now: float = NOW) -> ClaimedDelivery | None:
    kept, following = await queue.complete_on_loop(claimed, DONE, now, chain=True)
    assert kept
    return following


async def test_finishing_leases_the_next_of_its_key_and_nothing_else(tmp_path: Path) -> None:
    database = sqlite_database(tmp_path / "railyard.db")
    write_batch(database, [pending("a1", "a"), pending("b1", "b"), pending("a2", "a"), pending("a3", "a")])
    queue = DeliveryQueue(database, owner="w1")
    a1, b1 = queue.claim(NOW, 2)

    a2 = await finish(queue, a1)

    assert a2 is not None and (a2.delivery_id, a2.attempt) == ("a2", 1)
    assert leases(database)["a2"] == ("w1", 1) and leases(database)["a3"] == (None, 0)
    assert queue.claim(NOW, 10) == [], "a3 waits behind a2, b1 is held"
    assert (await finish(queue, a2)).delivery_id == "a3"  # type: ignore[union-attr]
    assert await finish(queue, b1) is None, "b's only delivery: nothing follows"
    database.close()


async def test_nothing_is_chained_without_a_key_or_without_being_asked(tmp_path: Path) -> None:
    database = sqlite_database(tmp_path / "railyard.db")
    write_batch(database, [pending("a1", "a"), pending("a2", "a"), pending("n1", None), pending("n2", None)])
    queue = DeliveryQueue(database, owner="w1")
    a1, n1, _ = queue.claim(NOW, 10)

    assert await finish(queue, n1) is None, "deliveries without a key have no order"
    assert leases(database)["n2"] == ("w1", 1), "n2 as the claim leased it"
    kept, following = await queue.complete_on_loop(a1, DONE, NOW)
    assert kept and following is None and leases(database)["a2"] == (None, 0)
    database.close()


async def test_a_next_delivery_another_worker_holds_is_not_chained(tmp_path: Path) -> None:
    """a1 queued again by an operator while another worker runs a2: finishing a1 leaves a2's
    lease to that worker."""
    database = sqlite_database(tmp_path / "railyard.db")
    write_batch(database, [pending("a1", "a"), pending("a2", "a")])
    queue = DeliveryQueue(database, owner="w1")
    [a1] = queue.claim(NOW, 10)
    with database.write() as connection:
        connection.execute(
            deliveries.update()
            .where(deliveries.c.delivery_id == "a2")
            .values(lease_owner="w2", lease_until=NOW + 60)
        )

    assert await finish(queue, a1) is None
    assert leases(database)["a2"] == ("w2", 0)
    database.close()


async def test_a_next_delivery_in_backoff_is_not_chained(tmp_path: Path) -> None:
    database = sqlite_database(tmp_path / "railyard.db")
    write_batch(database, [pending("a1", "a"), pending("a2", "a", NOW + 100)])  # due at NOW + 100
    queue = DeliveryQueue(database, owner="w1")
    [a1] = queue.claim(NOW, 10)

    assert await finish(queue, a1) is None
    assert leases(database)["a2"] == (None, 0)
    database.close()


async def test_a_finish_whose_lease_was_lost_chains_nothing(tmp_path: Path) -> None:
    database = sqlite_database(tmp_path / "railyard.db")
    write_batch(database, [pending("a1", "a"), pending("a2", "a")])
    slow = DeliveryQueue(database, owner="slow", lease_seconds=10)
    fast = DeliveryQueue(database, owner="fast", lease_seconds=10)
    [late] = slow.claim(NOW, 10)
    [taken] = fast.claim(NOW + 11, 10)  # the slow worker's lease ran out

    kept, following = await slow.complete_on_loop(late, DONE, NOW + 12, chain=True)

    assert (kept, following) == (False, None)
    assert leases(database)["a2"] == (None, 0) and taken.delivery_id == "a1"
    database.close()


def recording_router(seen: list[str]) -> Router:
    router = Router()

    @router.register("issues", "edited")
    async def record(event: WebhookEvent, services: Services) -> None:
        seen.append(event.delivery_id)

    return router


async def run_until(worker_run: asyncio.Task[None], stop: asyncio.Event, done: object) -> None:
    for _ in range(500):
        if done():  # type: ignore[operator]
            break
        await asyncio.sleep(0.01)
    stop.set()
    await worker_run


async def test_a_worker_runs_one_keys_deliveries_in_order_with_a_claim_only_every_few(tmp_path: Path) -> None:
    """40 deliveries of one commit's check runs, one slot: all in order, each recorded with its
    lease kept, and the queue's claim asked for at most one in `CHAINED_AT_MOST + 1`."""
    database = sqlite_database(tmp_path / "railyard.db")
    write_batch(database, [pending(f"c{n}", "commit", NOW + n / 1000) for n in range(40)])
    seen: list[str] = []
    worker = wire(database, clock=lambda: NOW + 1).worker(recording_router(seen), Metrics(), concurrency=1)
    claims = 0
    queue = worker.queue
    claim_here, claim = queue.claim_here, queue.claim

    def counting_here(now: float, limit: int) -> list[ClaimedDelivery]:
        nonlocal claims
        found = claim_here(now, limit)  # NotNowError: then the claim on a thread counts
        claims += bool(found)
        return found

    def counting(now: float, limit: int) -> list[ClaimedDelivery]:
        nonlocal claims
        found = claim(now, limit)
        claims += bool(found)
        return found

    queue.claim_here, queue.claim = counting_here, counting  # type: ignore[method-assign]
    stop = asyncio.Event()
    await run_until(asyncio.create_task(worker.run(stop)), stop, lambda: len(seen) == 40)
    with database.read() as connection:
        kept = connection.execute(select(runs.c.lease_kept)).scalars().all()
    database.close()

    assert seen == [f"c{n}" for n in range(40)]
    assert len(kept) == 40 and all(kept)
    assert claims == -(-40 // (CHAINED_AT_MOST + 1)), claims


async def test_another_tickets_older_command_waits_at_most_a_chain(tmp_path: Path) -> None:
    """A storm of one commit's check runs, and an older command of another ticket among them:
    with one slot, the command is run within `CHAINED_AT_MOST` deliveries of its turn."""
    database = sqlite_database(tmp_path / "railyard.db")
    storm = [pending(f"c{n}", "commit", NOW + n / 1000) for n in range(60)]
    write_batch(database, [*storm[:3], pending("command", "ticket", NOW + 0.0035), *storm[3:]])
    seen: list[str] = []
    worker = wire(database, clock=lambda: NOW + 1).worker(recording_router(seen), Metrics(), concurrency=1)
    stop = asyncio.Event()
    await run_until(asyncio.create_task(worker.run(stop)), stop, lambda: len(seen) == 61)
    database.close()

    assert seen.index("command") <= CHAINED_AT_MOST + 1, seen
    assert [s for s in seen if s != "command"] == [f"c{n}" for n in range(60)]
