"""The intake's writer process (SQLite): a delivery is answered only once the child committed it,
duplicates are answered as such, and a child that cannot start or goes away hands the stores
over to the writer thread, never to a silent loss."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.exc import OperationalError
from structlog.testing import capture_logs

from app.store import intake_process
from app.store.database import Database, NotNowError, WriteLock
from app.store.intake import STORE_TIMEOUT, Received, StoreTimeoutError, writer_connection
from app.store.intake_child import ANSWER, FRAME, READY
from app.store.intake_process import IntakeWriteError, ProcessDeliveryWriter, _environment, _metadata
from app.store.queue import deliveries
from tests.conftest import sqlite_database
from tests.integration.test_intake import NOW

COMMENT = '{"action": "created", "issue": {"number": 1}, "comment": {"body": "/claim"}}'


def stored(database: Database) -> dict[str, str]:
    """delivery id -> stored payload, read by a connection of its own."""
    with database.read() as connection:
        return dict(connection.execute(select(deliveries.c.delivery_id, deliveries.c.payload)).all())


def received(delivery_id: str, event: str = "issue_comment", routed: bool = True) -> Received:
    """A delivery whose signature the server verified."""
    return Received(delivery_id, event, routed, NOW)


async def store(writer: ProcessDeliveryWriter, delivery_id: str, payload: str = COMMENT) -> bool:
    """Whether the writer stored the delivery for the first time."""
    return (await writer.store_body(received(delivery_id), payload.encode())).new


def frame(token: int, delivery_id: str, payload: str = COMMENT) -> bytes:
    """One delivery as the server sends it to the writer process."""
    metadata, body = _metadata(received(delivery_id)), payload.encode()
    return FRAME.pack(FRAME.size + len(metadata) + len(body), len(metadata), token) + metadata + body


def answers_of(data: bytes) -> list[tuple[int, int]]:
    """(token, outcome) of each answer the child sent."""
    found, position = [], 0
    while position < len(data):
        token, outcome, _, length = ANSWER.unpack_from(data, position)
        found.append((token, outcome))
        position += ANSWER.size + length
    return found


def started_by_hand(database: Database) -> tuple[socket.socket, subprocess.Popen[bytes]]:
    """The writer process on a migrated `database`, and our end of its socket pair."""
    database.migrate()
    ours, theirs = socket.socketpair()
    child = subprocess.Popen(
        [sys.executable, "-m", "app.store.intake_child", str(theirs.fileno())],
        pass_fds=(theirs.fileno(),),
        env={**os.environ, "RAILYARD_INTAKE_DATABASE": database.url},
    )
    theirs.close()
    return ours, child


async def stopped_child(tmp_path: Path) -> tuple[Database, ProcessDeliveryWriter, subprocess.Popen[bytes]]:
    """A writer whose stores time out after 0.2 s, its child stopped (SIGSTOP) from the start."""
    database = sqlite_database(tmp_path / "railyard.db")
    writer = ProcessDeliveryWriter(database, timeout=0.2)
    await writer.start()
    child = writer._child
    assert child is not None
    child.send_signal(signal.SIGSTOP)
    return database, writer, child


@pytest.fixture
async def writer(tmp_path: Path) -> AsyncIterator[ProcessDeliveryWriter]:
    database = sqlite_database(tmp_path / "railyard.db")
    process_writer = ProcessDeliveryWriter(database)
    await process_writer.start()
    yield process_writer
    await process_writer.close()
    database.close()


async def test_a_store_is_answered_once_committed_and_a_repeat_as_already_stored(
    writer: ProcessDeliveryWriter,
) -> None:
    """202 means on disk: the row is there for any other connection when `store` returns."""
    assert writer.describe() == "process"
    assert await store(writer, "a", '{"n": 1}') is True
    assert stored(writer._database) == {"a": '{"n": 1}'}
    assert await store(writer, "a", '{"n": 2}') is False
    assert stored(writer._database) == {"a": '{"n": 1}'}


async def test_concurrent_stores_each_get_their_own_answer(writer: ProcessDeliveryWriter) -> None:
    """Stores sent together are committed in batches; every caller gets its delivery's answer."""
    ids = [f"d{i}" for i in range(300)] + ["d0", "d1"]
    answers = await asyncio.gather(*(store(writer, i, f'{{"i": "{i}"}}') for i in ids))
    assert answers.count(True) == 300 and answers[-2:] == [False, False]
    assert len(stored(writer._database)) == 300


async def test_close_commits_what_was_sent_and_the_child_exits(tmp_path: Path) -> None:
    """Stores still waiting when the server stops are committed before the child exits."""
    database = sqlite_database(tmp_path / "railyard.db")
    writer = ProcessDeliveryWriter(database)
    await writer.start()
    child = writer._child
    assert child is not None
    pending = [asyncio.ensure_future(store(writer, f"d{i}")) for i in range(50)]
    await asyncio.sleep(0)  # every store sent
    await writer.close()
    assert child.returncode == 0
    assert all(task.result() for task in pending)
    assert len(stored(database)) == 50
    database.close()


async def test_a_child_that_dies_fails_its_unanswered_stores_and_the_thread_takes_over(
    writer: ProcessDeliveryWriter,
) -> None:
    """Killed mid-run: what it had not answered fails (the server answers 503, GitHub may send
    it again); later stores are written by the writer thread, and /healthz says so."""
    assert await store(writer, "before") is True
    child = writer._child
    assert child is not None
    child.send_signal(signal.SIGSTOP)
    waiting = asyncio.ensure_future(store(writer, "unanswered"))
    await asyncio.sleep(0.05)
    with capture_logs() as logs:
        child.kill()
        with pytest.raises(IntakeWriteError):
            await waiting
        for _ in range(100):
            if writer.in_process:
                break
            await asyncio.sleep(0.02)
    assert writer.in_process and writer.describe().startswith("thread")
    assert any("went away" in line["event"] for line in logs)
    assert await store(writer, "after") is True
    assert await store(writer, "before") is False
    assert {"before", "after"} <= set(stored(writer._database))


async def test_a_child_that_cannot_start_leaves_the_stores_to_the_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No Python to run it (or any OSError starting it): the server writes in its own process."""

    def cannot(*_: object, **__: object) -> subprocess.Popen[bytes]:
        raise OSError("no such file")

    monkeypatch.setattr(subprocess, "Popen", cannot)
    database = sqlite_database(tmp_path / "railyard.db")
    writer = ProcessDeliveryWriter(database)
    await writer.start()
    try:
        assert writer.in_process
        assert await store(writer, "a") is True
        assert stored(database) == {"a": COMMENT}
    finally:
        await writer.close()
        database.close()


async def test_a_store_not_answered_in_time_fails_and_its_late_commit_is_logged(tmp_path: Path) -> None:
    """A child held up past the timeout: the store fails (503); once it commits after all, the
    log says so, and the delivery sent again is answered as already stored."""
    database, writer, child = await stopped_child(tmp_path)
    try:
        with pytest.raises(StoreTimeoutError) as timed_out:
            await store(writer, "slow")
        assert not timed_out.value.withdrawn
        with capture_logs() as logs:
            child.send_signal(signal.SIGCONT)
            for _ in range(100):
                if any("stored after all" in line["event"] for line in logs):
                    break
                await asyncio.sleep(0.02)
        assert any("stored after all" in line["event"] for line in logs)
        writer._timeout = STORE_TIMEOUT  # a real commit now: no need to race a short timeout
        assert await store(writer, "slow") is False
    finally:
        child.send_signal(signal.SIGCONT)
        await writer.close()
        database.close()


async def test_the_child_reports_ready_first_and_stops_at_the_end_of_its_input(tmp_path: Path) -> None:
    """Driven by hand over a socket pair: READY, then one answer per frame, then exit 0 on EOF,
    committing a batch sent just before the end."""
    database = sqlite_database(tmp_path / "railyard.db")
    ours, child = started_by_hand(database)
    try:
        ours.sendall(frame(7, "x") + frame(8, "x") + frame(9, "y"))
        ours.shutdown(socket.SHUT_WR)
        answers = b""
        while chunk := await asyncio.to_thread(ours.recv, 4096):
            answers += chunk
        assert answers_of(answers) == [(0, READY), (7, 1), (8, 0), (9, 1)]
        assert await asyncio.to_thread(child.wait, 10) == 0
        assert set(stored(database)) == {"x", "y"}
    finally:
        ours.close()
        child.kill()
        database.close()


HOLD_THE_LOCK = """
import sys
from app.store.database import WriteLock
lock = WriteLock(sys.argv[1])
lock.acquire()
print("held", flush=True)
sys.stdin.readline()
lock.release()
print("released", flush=True)
"""


def hold_the_lock(path: str) -> subprocess.Popen[str]:
    """Another process holding the write lock on `path` until a line on its stdin."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_THE_LOCK, path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def let_go(holder: subprocess.Popen[str]) -> None:
    assert holder.stdin is not None
    holder.stdin.write("\n")
    holder.stdin.flush()


def test_a_write_lock_held_by_another_process_keeps_this_one_waiting(tmp_path: Path) -> None:
    """The lock is across processes: while another process holds it, a try fails, a wait ends
    when that process lets go, and a wait past its timeout fails as SQLite would."""
    path = str(tmp_path / "railyard.db")
    holder = hold_the_lock(path)
    lock = WriteLock(path)
    try:
        assert lock.acquire(blocking=False) is False
        started = time.monotonic()
        with pytest.raises(OperationalError, match="database is locked"):
            lock.acquire(timeout=0.2)
        assert time.monotonic() - started >= 0.2
        threading.Timer(0.2, let_go, (holder,)).start()
        assert lock.acquire() is True  # waits for the other process
        assert holder.stdout is not None and holder.stdout.readline().strip() == "released"
        assert lock.acquire(blocking=False) is True  # reentrant within the process
        lock.release()
        lock.release()
    finally:
        lock.close()
        holder.kill()
        holder.wait(5)


def test_a_write_lock_timeout_covers_a_wait_behind_another_thread(tmp_path: Path) -> None:
    """`held(timeout)` bounds the whole wait: behind a thread of this process that holds the
    lock (or waits for it) as well as behind another process."""
    lock = WriteLock(str(tmp_path / "railyard.db"))
    taken, release = threading.Event(), threading.Event()

    def hold() -> None:
        with lock:
            taken.set()
            release.wait(5)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert taken.wait(5)
        started = time.monotonic()
        with pytest.raises(OperationalError, match="database is locked"), lock.held(0.1):
            pass
        assert 0.1 <= time.monotonic() - started < 5
    finally:
        release.set()
        holder.join(5)
        lock.close()


def test_the_writer_process_gets_none_of_the_apps_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the path, the locale, Python's own variables and the database's URL are passed on."""
    for name in ("WEBHOOK_SECRET", "webhook_secret", "PRIVATE_KEY", "OTEL_EXPORTER_OTLP_HEADERS"):
        monkeypatch.setenv(name, "s3cret")
    monkeypatch.setenv("PYTHONPATH", "/src")
    environment = _environment("sqlite:////data/railyard.db")
    assert "s3cret" not in environment.values()
    assert environment["PYTHONPATH"] == "/src"
    assert environment["RAILYARD_INTAKE_DATABASE"] == "sqlite:////data/railyard.db"


def test_the_writer_commits_with_synchronous_full(tmp_path: Path) -> None:
    """The connection the child commits on fsyncs every commit (PRAGMA synchronous = FULL)."""
    database = sqlite_database(tmp_path / "railyard.db")
    connection = writer_connection(database)
    try:
        assert connection.cursor().execute("PRAGMA synchronous").fetchone()[0] == 2
    finally:
        connection.close()
        database.close()


async def test_a_batch_the_child_cannot_commit_fails_its_stores_and_the_next_one_commits(
    writer: ProcessDeliveryWriter,
) -> None:
    """A commit that fails (here a NOT NULL column left empty) answers FAILED to each of its
    deliveries (the server answers 503); the child opens a new connection and goes on."""
    with pytest.raises(IntakeWriteError):
        await writer.store_body(received("broken")._replace(event=None), b"{}")  # type: ignore[arg-type]
    assert await store(writer, "fine") is True
    assert set(stored(writer._database)) == {"fine"}
    assert writer.describe() == "process"


async def test_a_child_that_answers_nothing_for_too_long_is_replaced_by_the_thread(
    tmp_path: Path,
) -> None:
    """Alive but stuck (stopped here): once nothing was answered for two timeouts while a
    delivery waited, the child is killed and the writer thread takes the stores."""
    database, writer, child = await stopped_child(tmp_path)
    try:
        with capture_logs() as logs:
            for n in range(4):
                with pytest.raises((StoreTimeoutError, IntakeWriteError)):
                    await store(writer, f"stuck-{n}")
            for _ in range(100):
                if writer.in_process:
                    break
                await asyncio.sleep(0.02)
        assert writer.in_process
        assert any("answered nothing" in line["event"] for line in logs)
        assert await asyncio.to_thread(child.wait, 10) == -signal.SIGKILL  # killed, stopped as it was
        assert await store(writer, "after") is True
    finally:
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signal.SIGCONT)
        await writer.close()
        database.close()


async def test_a_child_not_ready_in_time_is_stopped_and_the_thread_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Started, but not ready within the start's wait: stopped, and the thread takes over."""
    monkeypatch.setattr(intake_process, "START_WAIT", 0.0001)
    database = sqlite_database(tmp_path / "railyard.db")
    writer = ProcessDeliveryWriter(database)
    await writer.start()
    try:
        assert writer.in_process and writer._child is None
        assert await store(writer, "a") is True
    finally:
        await writer.close()
        database.close()


async def test_the_child_commits_the_whole_frames_of_a_torn_end_and_exits(tmp_path: Path) -> None:
    """A server that stopped mid-send: the whole deliveries before the torn one are committed
    and answered, the torn one is not, and the child exits cleanly."""
    database = sqlite_database(tmp_path / "railyard.db")
    ours, child = started_by_hand(database)
    try:
        torn = frame(2, "torn")
        ours.sendall(frame(1, "whole") + torn[: len(torn) // 2])
        ours.shutdown(socket.SHUT_WR)
        answers = b""
        while chunk := await asyncio.to_thread(ours.recv, 4096):
            answers += chunk
        assert answers_of(answers) == [(0, READY), (1, 1)]
        assert await asyncio.to_thread(child.wait, 10) == 0
        assert set(stored(database)) == {"whole"}
    finally:
        ours.close()
        child.kill()
        database.close()


def test_the_event_loops_bookkeeping_does_not_wait_for_another_processs_write(tmp_path: Path) -> None:
    """While another process (the writer process, a CLI command) holds the write lock, the
    loop's bookkeeping says "not now" at once instead of waiting on the event loop."""
    database = sqlite_database(tmp_path / "railyard.db")
    with database.bookkeeping():
        pass  # opens the loop's connection, as a first bookkeeping on a thread does
    holder = hold_the_lock(database.url.removeprefix("sqlite:///"))
    try:
        started = time.monotonic()
        with pytest.raises(NotNowError), database.bookkeeping_here():
            pass
        assert time.monotonic() - started < 2  # at once: nowhere near the lock's 30 s
    finally:
        let_go(holder)
        holder.wait(5)
        database.close()
