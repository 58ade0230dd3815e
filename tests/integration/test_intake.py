"""Durable intake: what `write_batch` stores and what the group-commit writer answers."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg.errors import LockNotAvailable
from sqlalchemy import func, select
from structlog.testing import capture_logs

from app.store.database import Database
from app.store.intake import (
    CALM_AFTER,
    SATURATED,
    DeliveryWriter,
    IncomingDelivery,
    RejectionLog,
    StoreTimeoutError,
    write_batch,
)
from app.store.queue import deliveries
from tests.conftest import sqlite_database

NOW = 1_800_000_000.0


def incoming(delivery_id: str, payload: str = '{"zen": "Keep it logically awesome."}') -> IncomingDelivery:
    """A pending `issue_comment` delivery as intake builds it."""
    return IncomingDelivery(
        delivery_id,
        "issue_comment",
        "created",
        7,
        "acme/web",
        "acme/web#1",
        "pending",
        payload,
        len(payload),
        NOW,
        NOW,
    )


def stored(database: Database) -> dict[str, str]:
    """delivery id -> stored payload."""
    with database.read() as connection:
        return dict(connection.execute(select(deliveries.c.delivery_id, deliveries.c.payload)).all())


def test_a_batch_stores_new_ids_once_and_reports_repeats(database: Database) -> None:
    write_batch(database, [incoming("a"), incoming("b")])

    answers = write_batch(
        database, [incoming("b", "{}"), incoming("c"), incoming("c", "{}"), incoming("d"), incoming("a")]
    )

    assert answers == [False, True, False, True, False]
    rows = stored(database)
    assert sorted(rows) == ["a", "b", "c", "d"]
    assert rows["b"] != "{}" and rows["c"] != "{}", "a repeat never overwrites what was stored first"


def test_a_batch_of_only_repeats_stores_nothing(database: Database) -> None:
    write_batch(database, [incoming("a")])

    assert write_batch(database, [incoming("a"), incoming("a")]) == [False, False]
    assert list(stored(database)) == ["a"]
    assert write_batch(database, []) == []


def test_every_column_is_stored_as_given(database: Database) -> None:
    payload = '{"comment": {"body": "caf\\u00e9 \u2603 <b>"}}'
    write_batch(database, [incoming("x", payload)])

    with database.read() as connection:
        row = connection.execute(select(deliveries).where(deliveries.c.delivery_id == "x")).one()
    assert (row.event, row.action, row.installation_id, row.repository, row.ordering_key) == (
        "issue_comment",
        "created",
        7,
        "acme/web",
        "acme/web#1",
    )
    assert (row.status, row.payload, row.payload_bytes, row.received_at, row.attempts) == (
        "pending",
        payload,
        len(payload),
        NOW,
        0,
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.lists(st.sampled_from("abcdefgh"), max_size=12), max_size=8))
def test_any_sequence_of_batches_matches_a_set_of_ids(
    tmp_path_factory: pytest.TempPathFactory, batches: list[list[str]]
) -> None:
    """Whatever the repeats, within or across batches: True exactly for an id's first arrival."""
    database = sqlite_database(tmp_path_factory.mktemp("intake") / "railyard.db")
    seen: set[str] = set()
    try:
        for batch in batches:
            expected = []
            for delivery_id in batch:
                expected.append(delivery_id not in seen)
                seen.add(delivery_id)
            assert write_batch(database, [incoming(i) for i in batch]) == expected
        assert set(stored(database)) == seen
    finally:
        database.close()


async def test_concurrent_stores_share_commits_and_each_gets_its_own_answer(database: Database) -> None:
    writer = DeliveryWriter(database, max_batch=16)
    await writer.start()
    try:
        ids = [f"d{n % 150}" for n in range(200)]  # 50 ids arrive twice
        answers = await asyncio.gather(*(writer.store(incoming(i)) for i in ids))
    finally:
        await writer.close()

    assert sum(answers) == 150
    first = {i: ids.index(i) for i in set(ids)}
    assert [answers[n] for n in first.values()] == [True] * 150
    with database.read() as connection:
        assert connection.execute(select(func.count()).select_from(deliveries)).scalar_one() == 150


async def test_close_writes_what_is_queued_and_later_stores_are_refused(database: Database) -> None:
    writer = DeliveryWriter(database)
    await writer.start()
    pending = [asyncio.ensure_future(writer.store(incoming(f"q{n}"))) for n in range(40)]
    await asyncio.sleep(0)
    await writer.close()

    assert all(await asyncio.gather(*pending))
    assert len(stored(database)) == 40
    with pytest.raises(RuntimeError, match="shutting down"):
        await writer.store(incoming("late"))


async def test_a_failed_commit_fails_its_callers_and_the_writer_carries_on(tmp_path: Path) -> None:
    database = sqlite_database(tmp_path / "railyard.db")
    writer = DeliveryWriter(database)
    await writer.start()
    try:
        with database.engine.begin() as connection:
            connection.exec_driver_sql("ALTER TABLE webhook_deliveries RENAME TO parked")
        with pytest.raises(Exception, match="webhook_deliveries"):
            await writer.store(incoming("lost"))
        with database.engine.begin() as connection:
            connection.exec_driver_sql("ALTER TABLE parked RENAME TO webhook_deliveries")

        assert await writer.store(incoming("kept")) is True
    finally:
        await writer.close()
        database.close()
    assert list(stored(sqlite_database(tmp_path / "railyard.db"))) == ["kept"]


async def test_intake_waits_its_turn_behind_another_write_transaction_of_the_process(tmp_path: Path) -> None:
    """It queues on the process's write lock, then stores as soon as the other one commits."""
    database = sqlite_database(tmp_path / "railyard.db")
    writer = DeliveryWriter(database)
    await writer.start()
    release = asyncio.Event()

    def hold_the_write_lock() -> None:
        with database.write() as connection:
            connection.exec_driver_sql("UPDATE webhook_deliveries SET attempts = attempts")
            asyncio.run_coroutine_threadsafe(release.wait(), loop).result()

    loop = asyncio.get_running_loop()
    holder = asyncio.create_task(asyncio.to_thread(hold_the_write_lock))
    await asyncio.sleep(0.05)
    store = asyncio.create_task(writer.store(incoming("after")))
    await asyncio.sleep(0.05)
    assert not store.done(), "intake waits while another transaction holds the write lock"
    release.set()
    await holder
    assert await asyncio.wait_for(store, timeout=5) is True
    await writer.close()
    database.close()


async def test_the_intake_reports_saturation_while_deliveries_queue_for_a_commit(tmp_path: Path) -> None:
    """More than SATURATED waiting for a commit: saturated; once all are answered, after a calm
    of CALM_AFTER, not (the hold itself: tests/unit/test_saturation.py)."""
    database = sqlite_database(tmp_path / "railyard.db")
    writer = DeliveryWriter(database)
    await writer.start()
    try:
        release = threading.Event()
        holder = asyncio.create_task(asyncio.to_thread(_hold_write_lock, database, release))
        await asyncio.sleep(0.05)
        stores = [asyncio.create_task(writer.store(incoming(f"s{n}"))) for n in range(SATURATED + 1)]
        await asyncio.sleep(0.05)
        saturated_while_held = writer.saturated()
        release.set()
        await holder
        assert all(await asyncio.gather(*stores))
        assert saturated_while_held
        await asyncio.sleep(CALM_AFTER)
        assert not writer.saturated()  # all answered, nothing waits
    finally:
        await writer.close()
        database.close()


def _hold_write_lock(database: Database, release: threading.Event) -> None:
    with database.write() as connection:
        connection.exec_driver_sql("UPDATE webhook_deliveries SET attempts = attempts")
        release.wait(timeout=10)


async def _until_taken(writer: DeliveryWriter) -> None:
    # The writer thread has taken everything queued into the batch it is writing (a store
    # queues its delivery as soon as its task first runs, which sleep(0) lets it do).
    await asyncio.sleep(0)
    while writer._pending:
        await asyncio.sleep(0.005)


async def test_a_store_not_committed_in_time_fails_and_the_writer_carries_on(tmp_path: Path) -> None:
    """Behind a stuck write, stores time out: one queued is withdrawn, the one being written commits late."""
    database = sqlite_database(tmp_path / "railyard.db")
    writer = DeliveryWriter(database, timeout=0.2)
    await writer.start()
    release = threading.Event()
    holder = asyncio.create_task(asyncio.to_thread(_hold_write_lock, database, release))
    await asyncio.sleep(0.05)
    try:
        taken = asyncio.create_task(writer.store(incoming("taken")))
        await _until_taken(writer)
        queued = asyncio.create_task(writer.store(incoming("queued")))
        with capture_logs() as logs:
            for store, delivery_id, withdrawn in ((taken, "taken", False), (queued, "queued", True)):
                with pytest.raises(StoreTimeoutError) as timed_out:
                    await store
                assert (timed_out.value.delivery_id, timed_out.value.withdrawn) == (delivery_id, withdrawn)
            release.set()
            await holder
            assert await writer.store(incoming("after")) is True
    finally:
        release.set()
        await writer.close()
    assert sorted(stored(database)) == ["after", "taken"], "the withdrawn store was never written"
    late = [entry for entry in logs if "stored after all" in entry["event"]]
    assert [entry["delivery_id"] for entry in late] == ["taken"]
    database.close()


async def test_a_database_locked_by_another_process_fails_stores_then_takes_them_again(
    tmp_path: Path,
) -> None:
    """SQLite locked elsewhere: the writer's lock wait ends with the store's, and it stores once released."""
    database = sqlite_database(tmp_path / "railyard.db")
    writer = DeliveryWriter(database, timeout=0.2)
    await writer.start()
    other = sqlite3.connect(tmp_path / "railyard.db", isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        # The writer's lock wait equals the store's timeout: whichever ends first fails the store
        # (both answer 503 at the door).
        with pytest.raises((StoreTimeoutError, sqlite3.OperationalError)):
            await writer.store(incoming("locked-out"))
        other.execute("ROLLBACK")
        assert await writer.store(incoming("after")) is True
    finally:
        other.close()
        await writer.close()
    assert "after" in stored(database)
    database.close()


def test_refusals_are_logged_once_per_reason_per_window_with_a_count() -> None:
    """A flood of one refusal costs one line per window, and the next line counts those left out."""
    now = [0.0]
    refusals = RejectionLog(every=60.0, clock=lambda: now[0])
    with capture_logs() as logs:
        for _ in range(50):
            refusals.refused("missing or wrong X-Hub-Signature-256", 401, github_event="other")
        refusals.refused("body is not JSON", 400, github_event="ping")
        now[0] = 61.0
        refusals.refused("missing or wrong X-Hub-Signature-256", 401, github_event="ping")
    assert [(entry["reason"], entry["suppressed_since_last"]) for entry in logs] == [
        ("missing or wrong X-Hub-Signature-256", 0),
        ("body is not JSON", 0),
        ("missing or wrong X-Hub-Signature-256", 49),
    ]


def _lock_out(database: Database) -> tuple[object, object]:
    """Another connection holding the deliveries table (SQLite: the whole file); and its release."""
    if database.is_sqlite:
        other = sqlite3.connect(database.url.removeprefix("sqlite:///"), isolation_level=None)
        other.execute("BEGIN EXCLUSIVE")
        return other, lambda: (other.execute("ROLLBACK"), other.close())
    connection = database.engine.connect()
    transaction = connection.begin()
    connection.exec_driver_sql("LOCK TABLE webhook_deliveries IN ACCESS EXCLUSIVE MODE")
    return connection, lambda: (transaction.rollback(), connection.close())


NOT_STORED = (StoreTimeoutError, LockNotAvailable, sqlite3.OperationalError)
"""How a store waiting on a lock held elsewhere ends: its own timeout, or the lock's."""


def _lock_or_store_timeout(error: BaseException) -> bool:
    """The store's timeout or the lock's, not any other SQLite error."""
    return not isinstance(error, sqlite3.OperationalError) or "locked" in str(error)


async def test_the_writer_gives_up_on_a_lock_held_elsewhere_and_takes_the_next_batch(
    database: Database,
) -> None:
    """While another connection holds the lock, the writer's wait ends with the store's: it is not
    wedged. A store ends with its own timeout, or with the lock's when that comes first (both are
    the store's timeout; the event loop of a loaded machine runs the store's timer late); either
    way the door answers 503."""
    writer = DeliveryWriter(database, timeout=0.5)
    await writer.start()
    _, release = _lock_out(database)
    try:
        with pytest.raises(NOT_STORED) as first:
            await writer.store(incoming("first"))
        second = asyncio.create_task(writer.store(incoming("second")))
        await _until_taken(writer)
        with pytest.raises(NOT_STORED) as timed_out:
            await second
        assert all(_lock_or_store_timeout(error.value) for error in (first, timed_out))
        withdrawn = [getattr(error.value, "withdrawn", False) for error in (first, timed_out)]
        assert withdrawn == [False, False], (
            "the writer came back from the first batch while the lock was still held"
        )
    finally:
        release()  # type: ignore[operator]
    try:
        assert await writer.store(incoming("after")) is True
    finally:
        await writer.close()
    rows = stored(database)
    assert "first" not in rows, "a batch that gave up on the lock is not committed later"
    assert "after" in rows  # ("second" may have been committed when the lock went, or not)
