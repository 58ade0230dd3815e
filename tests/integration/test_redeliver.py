"""`railyard redeliver`: a delivery a worker is running now is left to it; any other stored
delivery (done, failed, waiting, or leased by a worker whose lease ran out) runs again."""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import select

from app.cli.common import EXIT_RUNNING
from app.store.database import Database
from app.store.delivery_status import DONE, FAILED, PENDING
from app.store.intake import IncomingDelivery, write_batch
from app.store.queue import DeliveryQueue, deliveries
from tests.integration.test_cli import run


def stored(delivery_id: str, key: str) -> IncomingDelivery:
    """A delivery stored ten minutes ago, waiting for the worker."""
    received = time.time() - 600
    return IncomingDelivery(
        delivery_id, "issues", "edited", 1, "acme/web", key, PENDING, "{}", 2, received, received
    )


def row(database: Database, delivery_id: str) -> dict[str, Any]:
    """The delivery's queue columns as stored."""
    columns = (deliveries.c.status, deliveries.c.attempts, deliveries.c.lease_until, deliveries.c.lease_owner)
    with database.read() as connection:
        found = connection.execute(select(*columns).where(deliveries.c.delivery_id == delivery_id))
        return dict(found.mappings().one())


def test_redeliver_refuses_a_delivery_whose_lease_is_live_and_changes_nothing(database: Database) -> None:
    """A worker holds the delivery's lease (it is running it now): `redeliver` says so, exits
    non-zero and leaves the row alone, so no second worker can run it beside the first, and the
    running worker still records its outcome."""
    write_batch(database, [stored("running", "a")])
    worker = DeliveryQueue(database, owner="worker-1", lease_seconds=600)
    [claimed] = worker.claim(time.time(), 1)
    before = row(database, "running")

    status, out, err = run(database.url, "redeliver", "running")

    assert (status, out) == (EXIT_RUNNING, "")
    assert "running" in err and "being processed" in err, err
    assert row(database, "running") == before
    assert DeliveryQueue(database, owner="worker-2").claim(time.time(), 10) == []
    assert worker.complete(claimed, DONE, time.time()), "the running worker kept its lease"
    assert row(database, "running")["status"] == DONE


def test_redeliver_runs_done_failed_and_lapsed_deliveries_again(database: Database) -> None:
    """Done, failed, and pending under a lease that ran out (its worker died): each is queued
    again, due now, with no lease and its tries counted afresh."""
    write_batch(database, [stored("done", "a"), stored("failed", "b"), stored("lapsed", "c")])
    queue = DeliveryQueue(database, owner="gone", lease_seconds=15)
    by_id = {item.delivery_id: item for item in queue.claim(time.time() - 120, 10)}  # leases long run out
    assert queue.complete(by_id["done"], DONE, time.time())
    assert queue.complete(by_id["failed"], FAILED, time.time(), "boom")

    status, out, err = run(database.url, "redeliver", "done", "failed", "lapsed")

    assert (status, err) == (0, "")
    assert out.count("queued again") == 3
    for delivery_id in ("done", "failed", "lapsed"):
        assert row(database, delivery_id) == {
            "status": PENDING,
            "attempts": 0,
            "lease_until": None,
            "lease_owner": None,
        }


def test_redeliver_of_several_queues_the_free_ones_and_refuses_the_running_one(database: Database) -> None:
    """One running delivery among several: the others are queued again, the running one is named
    and untouched, and the exit status says not everything was done."""
    write_batch(database, [stored("running", "a"), stored("free", "b")])
    worker = DeliveryQueue(database, owner="worker-1", lease_seconds=600)
    claimed = {item.delivery_id: item for item in worker.claim(time.time(), 10)}
    assert worker.complete(claimed["free"], DONE, time.time())
    before = row(database, "running")

    status, out, err = run(database.url, "redeliver", "free", "running")

    assert status == EXIT_RUNNING
    assert "free queued again" in out and "running" not in out
    assert "running" in err and "free" not in err
    assert row(database, "running") == before
    assert row(database, "free")["status"] == PENDING
