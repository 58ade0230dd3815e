"""Webhook intake: verify the signature, store the delivery durably, then acknowledge.

Stores go through one writer that commits whatever has queued up while the previous
commit was being fsynced (group commit), so concurrent requests share an fsync and every
202 means "committed and on disk".
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from app.database import Database

MAX_BODY_BYTES = 25 * 1024 * 1024  # GitHub caps webhook payloads at 25 MB
MAX_BATCH = 256
_COLUMNS = (
    "delivery_id, event, action, installation_id, repository, ordering_key, status, "
    "payload, payload_bytes, received_at, next_attempt_at, attempts"
)


def verify_signature(body: bytes, header: str | None, secrets: Sequence[bytes]) -> bool:
    """Whether `X-Hub-Signature-256` is the HMAC-SHA256 of the body under any secret.

    Every secret is compared, in constant time, so timing reveals neither the signature
    nor which secret matched.
    """
    if not header or not header.startswith("sha256=") or not secrets:
        return False
    given = header[len("sha256=") :].strip().lower().encode("ascii", "replace")
    matched = False
    for secret in secrets:
        expected = hmac.digest(secret, body, "sha256").hex().encode()
        matched |= hmac.compare_digest(expected, given)
    return matched


def sign(body: bytes, secret: bytes) -> str:
    """The `X-Hub-Signature-256` header GitHub would send (for tests, tools and benchmarks)."""
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class IncomingDelivery:
    """A verified delivery about to be stored; field order matches the INSERT."""

    delivery_id: str
    event: str
    action: str | None
    installation_id: int | None
    repository: str | None
    ordering_key: str | None
    status: str
    payload: str
    payload_bytes: int
    received_at: float
    next_attempt_at: float
    attempts: int = 0

    def row(self) -> tuple[object, ...]:
        """The INSERT's parameters (cheaper than `dataclasses.astuple`, which deep-copies)."""
        return (
            self.delivery_id,
            self.event,
            self.action,
            self.installation_id,
            self.repository,
            self.ordering_key,
            self.status,
            self.payload,
            self.payload_bytes,
            self.received_at,
            self.next_attempt_at,
            self.attempts,
        )


def _write_sqlite(cursor: Any, batch: Sequence[IncomingDelivery]) -> list[bool]:
    # One writer at a time (BEGIN IMMEDIATE), so "not there yet" cannot change under us.
    ids = list({d.delivery_id for d in batch})
    marks = ",".join("?" * len(ids))
    cursor.execute(f"SELECT delivery_id FROM webhook_deliveries WHERE delivery_id IN ({marks})", ids)  # noqa: S608
    seen = {row[0] for row in cursor.fetchall()}
    fresh, inserted = [], []
    for delivery in batch:
        is_new = delivery.delivery_id not in seen
        seen.add(delivery.delivery_id)
        inserted.append(is_new)
        if is_new:
            fresh.append(delivery.row())
    if fresh:
        marks = ",".join("?" * len(fresh[0]))
        cursor.executemany(f"INSERT INTO webhook_deliveries ({_COLUMNS}) VALUES ({marks})", fresh)  # noqa: S608
    return inserted


def _write_postgres(cursor: Any, batch: Sequence[IncomingDelivery]) -> list[bool]:
    # Several server processes may share PostgreSQL: let the unique index decide.
    marks = ",".join(["%s"] * 12)
    statement = (
        f"INSERT INTO webhook_deliveries ({_COLUMNS}) VALUES ({marks}) "  # noqa: S608
        "ON CONFLICT (delivery_id) DO NOTHING"
    )
    inserted = []
    for delivery in batch:
        cursor.execute(statement, delivery.row())
        inserted.append(cursor.rowcount == 1)
    return inserted


def write_batch(database: Database, batch: Sequence[IncomingDelivery], connection: Any = None) -> list[bool]:
    """Store a batch in one durable transaction; True for each delivery stored for the first time.

    This is the hot path of every webhook, so it talks to the driver directly, on a pooled
    connection that carries railyard's pragmas (WAL, synchronous=FULL, busy timeout). The
    intake writer passes the connection it keeps; other callers borrow one from the pool.
    """
    borrowed = connection is None
    if borrowed:
        connection = database.engine.raw_connection()
    try:
        cursor = connection.cursor()
        if database.is_sqlite:
            cursor.execute("BEGIN IMMEDIATE")
            inserted = _write_sqlite(cursor, batch)
        else:
            inserted = _write_postgres(cursor, batch)
        connection.commit()
        return inserted
    except BaseException:
        connection.rollback()
        raise
    finally:
        if borrowed:
            connection.close()  # back to the pool


class DeliveryWriter:
    """Group commit: one thread writes whatever queued up while the last fsync ran."""

    def __init__(self, database: Database, *, max_batch: int = MAX_BATCH) -> None:
        self._database = database
        self._max_batch = max_batch
        self._queue: list[tuple[IncomingDelivery, asyncio.Future[bool]]] = []
        self._wakeup = asyncio.Event()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="railyard-intake")
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._connection: Any = None  # kept by the writer thread, returned to the pool on close

    def _write(self, deliveries: list[IncomingDelivery]) -> list[bool]:
        if self._connection is None:
            self._connection = self._database.engine.raw_connection()
        try:
            return write_batch(self._database, deliveries, self._connection)
        except Exception:
            self._connection.invalidate()  # a broken connection is not reused
            self._connection = None
            raise

    def _release(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    async def start(self) -> None:
        """Start the writer task."""
        self._task = asyncio.create_task(self._run(), name="railyard-intake-writer")

    async def close(self) -> None:
        """Write what is queued, then stop."""
        self._closing = True
        self._wakeup.set()
        if self._task is not None:
            await self._task
        await asyncio.get_running_loop().run_in_executor(self._executor, self._release)
        self._executor.shutdown(wait=True)

    async def store(self, delivery: IncomingDelivery) -> bool:
        """Store durably; True if new, False if this delivery id was already stored."""
        if self._closing:
            raise RuntimeError("intake is shutting down")
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._queue.append((delivery, future))
        self._wakeup.set()
        return await future

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            while self._queue:
                batch, self._queue = self._queue[: self._max_batch], self._queue[self._max_batch :]
                deliveries = [delivery for delivery, _ in batch]
                try:
                    inserted = await loop.run_in_executor(
                        self._executor, write_batch, self._database, deliveries
                    )
                except Exception as error:  # the callers answer 503; nothing was acknowledged
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(error)
                    continue
                for (_, future), is_new in zip(batch, inserted, strict=True):
                    if not future.done():
                        future.set_result(is_new)
            if self._closing:
                return
