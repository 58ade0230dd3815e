"""A delivery's lease and outcome on the event loop (SQLite): done at once, or not at all and
then on a thread (`Database.bookkeeping_here`, `DeliveryQueue.claim_here`, `here=True`)."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from sqlalchemy import select

from app.bootstrap import wire
from app.runtime import worker as worker_module
from app.runtime.metrics import Metrics
from app.runtime.worker import Worker
from app.store import database as database_module
from app.store.database import Database, NotNowError
from app.store.delivery_status import DONE
from app.store.intake import write_batch
from app.store.queue import ClaimedDelivery, DeliveryQueue, deliveries, runs
from tests.conftest import sqlite_database
from tests.integration.test_queue import ids
from tests.integration.test_worker import NOW, edited, recording_router

SLOW = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100000000) "
    "SELECT count(*) FROM c"
)  # seconds of SQLite's work


@pytest.fixture
def database(tmp_path: Path) -> Iterator[Database]:
    """SQLite with three pending deliveries: two of ticket `a`, one of ticket `b`."""
    database = sqlite_database(tmp_path / "railyard.db")
    write_batch(database, [edited("a1", "a"), edited("a2", "a"), edited("b1", "b")])
    with database.bookkeeping():  # opens the event loop's connection too, as a worker's first claim does
        pass
    yield database
    database.close()


def row(database: Database, delivery_id: str) -> dict[str, object]:
    """The stored delivery's columns."""
    with database.read() as connection:
        found = connection.execute(select(deliveries).where(deliveries.c.delivery_id == delivery_id)).one()
    return dict(found._mapping)


def run_count(database: Database) -> int:
    """How many processing runs were recorded."""
    with database.read() as connection:
        return len(connection.execute(select(runs)).all())


def recording_worker(database: Database) -> tuple[Worker, list[str]]:
    """A worker whose one handler notes the id of every `issues.edited` delivery it runs."""
    router, seen = recording_router()
    return wire(database, clock=lambda: NOW).worker(router, Metrics(), poll_seconds=0.05), seen


async def run_until(worker: Worker, seen: list[str], count: int) -> None:
    """Run the worker until it has run `count` deliveries (two seconds at most), then stop it."""
    stop = asyncio.Event()
    running = asyncio.create_task(worker.run(stop))
    for _ in range(200):
        if len(seen) >= count:
            break
        await asyncio.sleep(0.01)
    stop.set()
    await running


def test_on_the_loop_a_claim_and_an_outcome_are_what_they_are_on_a_thread(database: Database) -> None:
    queue = DeliveryQueue(database, owner="w1")
    claimed = queue.claim_here(NOW, 10)
    assert ids(claimed) == ["a1", "b1"]
    assert queue.claim_here(NOW, 10) == [] and queue.claim(NOW, 10) == [], "leased, not handed out twice"
    assert row(database, "a1")["lease_owner"] == "w1"

    assert queue.complete(claimed[0], DONE, NOW + 1, here=True)
    assert row(database, "a1")["status"] == DONE and row(database, "a1")["lease_until"] is None
    assert queue.retry(claimed[1], NOW + 60, "GitHub away", here=True)
    assert row(database, "b1")["next_attempt_at"] == NOW + 60
    assert run_count(database) == 2
    assert ids(queue.claim_here(NOW + 2, 10)) == ["a2"]


def test_the_loop_does_nothing_until_a_thread_has_opened_its_connection(tmp_path: Path) -> None:
    """Opening a connection can wait (for the pool, for SQLite): never on the event loop."""
    database = sqlite_database(tmp_path / "railyard.db")
    write_batch(database, [edited("a1", "a")])
    queue = DeliveryQueue(database, owner="w1")
    with pytest.raises(NotNowError):
        queue.claim_here(NOW, 10)
    claimed = queue.claim(NOW, 10)  # on a thread: this opens it
    assert queue.complete(claimed[0], DONE, NOW, here=True)
    database.close()


def test_a_commit_that_ends_past_the_budget_still_counts_as_done(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite asks the progress handler once more as a statement ends: a COMMIT that has
    committed must not then be reported as interrupted (its work would be redone on a thread,
    a lease left behind or a run recorded twice)."""
    clock = [0.0]
    monkeypatch.setattr(database_module, "time", SimpleNamespace(perf_counter=lambda: clock[0]))
    monkeypatch.setattr(database_module, "HERE_PROGRESS_STEPS", 1)  # the handler at every step

    def at_commit(sql: str) -> None:
        if sql == "COMMIT":
            clock[0] += 10.0  # the budget runs out while the COMMIT runs

    database._loop_bookkeeper.driver_connection.set_trace_callback(at_commit)
    queue = DeliveryQueue(database, owner="w1")
    claimed = queue.claim_here(NOW, 10)
    assert ids(claimed) == ["a1", "b1"]
    assert queue.complete(claimed[0], DONE, NOW, here=True)
    assert queue.retry(claimed[1], NOW + 60, "later", here=True)
    assert run_count(database) == 2 and row(database, "a1")["status"] == DONE


def test_while_another_thread_writes_nothing_is_done_on_the_loop_and_nothing_waits(
    database: Database,
) -> None:
    queue = DeliveryQueue(database, owner="w1")
    claimed = queue.claim(NOW, 1)
    held, release = threading.Event(), threading.Event()

    def writer() -> None:
        with database.writing():  # the intake's commit, say
            held.set()
            release.wait(5)

    thread = threading.Thread(target=writer)
    thread.start()
    held.wait(5)
    try:
        started = time.monotonic()
        with pytest.raises(NotNowError) as raised:
            queue.claim_here(NOW, 10)
        with pytest.raises(NotNowError):
            queue.complete(claimed[0], DONE, NOW, here=True)
        assert time.monotonic() - started < 0.5
        assert not raised.value.over_budget
    finally:
        release.set()
        thread.join()
    assert row(database, "b1")["lease_owner"] is None, "nothing leased"
    assert row(database, "a1")["status"] == "pending" and run_count(database) == 0, "nothing recorded"
    assert queue.complete(claimed[0], DONE, NOW, here=True), "and once the lock is free, it is done"


def test_while_another_process_writes_the_loop_does_not_wait_for_sqlite(
    database: Database, tmp_path: Path
) -> None:
    queue = DeliveryQueue(database, owner="w1")
    claimed = queue.claim(NOW, 1)
    other = sqlite3.connect(tmp_path / "railyard.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # a CLI command's write transaction, in another process
    try:
        started = time.monotonic()
        with pytest.raises(NotNowError):
            queue.complete(claimed[0], DONE, NOW, here=True)
        with pytest.raises(NotNowError):
            queue.claim_here(NOW, 10)
        assert time.monotonic() - started < 0.5, "the loop's connection has no busy timeout"
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert row(database, "a1")["status"] == "pending" and row(database, "b1")["lease_owner"] is None
    assert queue.complete(claimed[0], DONE, NOW, here=True)


def test_a_statement_past_the_budget_is_stopped_and_what_the_block_wrote_is_rolled_back(
    database: Database,
) -> None:
    started = time.monotonic()
    with pytest.raises(NotNowError) as raised, database.bookkeeping_here() as cursor:
        cursor.execute("BEGIN IMMEDIATE")
        cursor.execute("UPDATE webhook_deliveries SET lease_owner = 'half-way' WHERE delivery_id = 'a1'")
        cursor.execute(SLOW)
    assert raised.value.over_budget
    assert time.monotonic() - started < 0.5, "interrupted within its budget, not run for seconds"
    assert row(database, "a1")["lease_owner"] is None
    with database.bookkeeping_here() as cursor:  # the connection is fine afterwards
        assert cursor.execute("SELECT count(*) FROM webhook_deliveries").fetchone() == (3,)


async def test_a_worker_whose_loop_claim_ran_over_budget_claims_on_a_thread_for_a_while(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker, seen = recording_worker(database)
    on_loop = on_thread = 0
    real_claim = worker.queue.claim

    def over_budget(now: float, limit: int) -> list[ClaimedDelivery]:
        nonlocal on_loop
        on_loop += 1
        raise NotNowError("interrupted", over_budget=True)

    def counted(now: float, limit: int) -> list[ClaimedDelivery]:
        nonlocal on_thread
        on_thread += 1
        return real_claim(now, limit)

    monkeypatch.setattr(worker.queue, "claim_here", over_budget)
    monkeypatch.setattr(worker.queue, "claim", counted)
    monkeypatch.setattr(worker_module, "CLAIM_HERE_PAUSE", 60.0)
    await run_until(worker, seen, 3)
    assert sorted(seen) == ["a1", "a2", "b1"], "every delivery processed"
    assert on_loop == 1 and on_thread >= 2, "after one claim over budget, the claims went to a thread"


async def test_a_worker_on_sqlite_claims_and_records_outcomes_on_the_loop(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker, seen = recording_worker(database)
    done_here = {"claims": 0, "outcomes": 0}
    real_here, real_finish = worker.queue.claim_here, worker.queue._finish

    def claim_here(now: float, limit: int) -> list[ClaimedDelivery]:
        claimed = real_here(now, limit)
        done_here["claims"] += bool(claimed)
        return claimed

    def finish(*args: Any, here: bool, **chaining: Any) -> Any:
        finished = real_finish(*args, here=here, **chaining)
        done_here["outcomes"] += here
        return finished

    monkeypatch.setattr(worker.queue, "claim_here", claim_here)
    monkeypatch.setattr(worker.queue, "_finish", finish)
    await run_until(worker, seen, 3)
    assert sorted(seen) == ["a1", "a2", "b1"]
    # a2 is leased as a1's outcome is recorded (`DeliveryQueue.complete_on_loop`'s chain): no claim
    assert done_here == {"claims": 1, "outcomes": 3}, "every claim and outcome on the loop, no thread"
    assert {row(database, name)["status"] for name in ("a1", "a2", "b1")} == {DONE}
