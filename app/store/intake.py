"""Webhook intake: verify the signature, store the delivery durably, then acknowledge.

Stores go through one writer that commits whatever has queued up while the previous
commit was being fsynced (group commit), so concurrent requests share an fsync and every
202 means "committed and on disk". A store that cannot commit within `STORE_TIMEOUT`
(the database is locked or unreachable) fails, so the request answers 503 well inside
GitHub's 10 s and GitHub records a failure that recovery redelivers.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Protocol, TypeVar

import structlog

from app.contracts.webhook_payloads import examine
from app.store.checkpoints import WalCheckpointer
from app.store.connection_setup import BUSY_TIMEOUT_MS
from app.store.database import Database
from app.store.delivery_status import IGNORED, PENDING, REJECTED

log = structlog.get_logger(__name__)

MAX_BODY_BYTES = 25 * 1024 * 1024  # GitHub caps webhook payloads at 25 MB
MAX_BATCH = 256
SATURATED = 4
"""Deliveries waiting for a commit beyond which the intake counts as saturated (at 1,000
deliveries a second one or two wait; under a flood, nearly every open connection does)."""
SATURATED_HOLD = 0.1
"""Seconds the intake still counts as saturated after it last was: under a flood the count of
waiting deliveries dips below `SATURATED` between commits, and a worker looking at such a dip
took a whole batch of new work (a tenth of the intake's rate on the 2-core machine)."""
CALM_AFTER = 0.02
"""Seconds with nothing waiting for a commit that end the hold at once: a burst that was all
answered is no flood, and a worker never waits on one."""
GITHUB_WAITS_MS = 10_000  # GitHub gives up on a webhook not answered within 10 s
STORE_TIMEOUT = 4.0
"""Seconds a store may wait for its commit before its request answers 503 (SPEC: within 5 s)."""


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


class IncomingDelivery(NamedTuple):
    """A verified delivery about to be stored: itself the INSERT's parameters, in order.

    A named tuple rather than a dataclass: one is built for every webhook, and the tuple is
    both the cheapest to build and already the row the driver binds.
    """

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
    last_error: str | None = None
    traceparent: str | None = None
    repository_id: int | None = None


class Received(NamedTuple):
    """A webhook whose signature was verified, its body not read yet: what the door hands the
    writer (`IntakeWriter.store_body`), which reads the body (`row_of`) and stores the row."""

    delivery_id: str
    event: str
    routed: bool
    """Whether a handler takes the event: the row is `pending`, else `ignored`."""
    received_at: float
    traceparent: str | None = None


class Stored(NamedTuple):
    """What storing a webhook came to."""

    new: bool
    """False: this delivery id was already stored (nothing was written)."""
    status: str
    """The row's: pending, ignored, or rejected (the body is not of its event)."""
    reason: str | None = None
    """Why a rejected body is not of its event."""


def row_of(received: Received, body: bytes) -> IncomingDelivery:
    """The row a verified body is stored as; `UnreadableBody` when it is not a JSON object.

    A body without the shape of its event is stored `rejected` and never processed."""
    examined = examine(received.event, body)
    facts, wrong, at = examined.facts, examined.mismatch, received.received_at
    status = REJECTED if wrong else PENDING if received.routed else IGNORED
    action, repository = as_column(facts.action, 100), as_column(facts.repository, 300)
    return IncomingDelivery(
        received.delivery_id, received.event, action, facts.installation_id, repository,
        as_column(facts.ordering_key, KEY_LIMIT), status, examined.text, examined.size, at, at, 0, wrong,
        received.traceparent, facts.repository_id,
    )  # fmt: skip


KEY_LIMIT = 600  # an ordering key's characters at most (an index row has a size limit)


def as_column(fact: str | None, limit: int) -> str | None:
    """A fact read from the body as its column can hold it, whatever a signed body says: no NUL
    (PostgreSQL's text refuses one, and the batch with it) and at most `limit` characters (an
    index row has a size limit). Real names are far shorter; a ref that long keeps its order."""
    if fact is None:
        return None
    fact = fact.replace("\x00", "\ufffd") if "\x00" in fact else fact
    return fact[:limit]


_T = TypeVar("_T")
_COLUMNS = ", ".join(IncomingDelivery._fields)  # webhook_deliveries' columns of the same names


def _unique(batch: Sequence[IncomingDelivery]) -> dict[str, IncomingDelivery]:
    """The batch's first delivery of each id, in order (a later copy is a duplicate)."""
    first: dict[str, IncomingDelivery] = {}
    for delivery in batch:
        first.setdefault(delivery.delivery_id, delivery)
    return first


def _insert_statement(rows: int, mark: str) -> str:
    one = "(" + ",".join([mark] * len(IncomingDelivery._fields)) + ")"
    values = ",".join([one] * rows)
    return f"INSERT INTO webhook_deliveries ({_COLUMNS}) VALUES {values} ON CONFLICT (delivery_id) DO NOTHING"  # noqa: S608


def _write_sqlite(connection: Any, unique: dict[str, IncomingDelivery]) -> set[str]:
    # One autocommit statement is the whole transaction: SQLite takes the write lock, skips ids
    # already stored, inserts the rest and fsyncs the WAL inside a single call, so the writer
    # thread gives up and retakes the GIL once per batch instead of once per statement.
    cursor = connection.cursor()
    before = connection.total_changes
    parameters = [value for delivery in unique.values() for value in delivery]
    cursor.execute(_insert_statement(len(unique), "?"), parameters)
    inserted = connection.total_changes - before
    if inserted == len(unique):
        return set(unique)
    if inserted == 0:
        return set()
    # Some ids were already stored (a redelivery). SQLite gives each new row the table's largest
    # rowid plus one, so this statement's rows are the last `inserted` rowids up to lastrowid.
    last = cursor.lastrowid
    cursor.execute(
        "SELECT delivery_id FROM webhook_deliveries WHERE seq > ? AND seq <= ?", (last - inserted, last)
    )
    return {row[0] for row in cursor.fetchall()}


def _write_postgres(connection: Any, unique: dict[str, IncomingDelivery]) -> set[str]:
    # Several server processes may share PostgreSQL: the unique index decides, in one round trip.
    cursor = connection.cursor()
    parameters = [value for delivery in unique.values() for value in delivery]
    cursor.execute(_insert_statement(len(unique), "%s") + " RETURNING delivery_id", parameters)
    stored = {row[0] for row in cursor.fetchall()}
    connection.commit()
    return stored


def write_batch(database: Database, batch: Sequence[IncomingDelivery], connection: Any = None) -> list[bool]:
    """Store a batch durably and atomically; True for each delivery stored for the first time.

    A delivery id already stored, or repeated earlier in the batch, gets False and no row.
    This is the hot path of every webhook, so it talks to the driver directly, on a pooled
    connection that carries railyard's pragmas (WAL, synchronous=FULL, busy timeout). The
    intake writer passes the connection it keeps; other callers borrow one from the pool.
    """
    if not batch:
        return []
    borrowed = connection is None
    if borrowed:
        connection = database.engine.raw_connection()
    try:
        unique = _unique(batch)
        if database.is_sqlite:
            with database.writing(timeout=STORE_TIMEOUT):  # as long as a request waits for its answer
                stored = _write_sqlite(connection, unique)
        else:
            stored = _write_postgres(connection, unique)
    except BaseException:
        connection.rollback()
        raise
    finally:
        if borrowed:
            connection.close()  # back to the pool
    return [delivery is unique[delivery.delivery_id] and delivery.delivery_id in stored for delivery in batch]


class StoreTimeoutError(Exception):
    """The delivery was not committed within the writer's timeout (one being written may commit later)."""

    def __init__(self, timeout: float, delivery_id: str, withdrawn: bool) -> None:
        super().__init__(f"not committed within {timeout:g} s")
        self.delivery_id = delivery_id
        self.withdrawn = withdrawn
        """Whether it was taken off the queue unwritten (else it was being written)."""


class Saturation:
    """Whether the intake is flooded, for the worker to give way (`Worker.intake_busy`): more than
    `SATURATED` deliveries waiting for a commit, or were less than `SATURATED_HOLD` ago, unless
    nothing has waited for `CALM_AFTER`."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.waiting = 0  # stores not yet answered
        self._clock = clock
        self._until = 0.0
        self._calm_since = 0.0

    def enter(self) -> None:
        """A store begins to wait."""
        self.waiting += 1
        if self.waiting > SATURATED:
            self._until = self._clock() + SATURATED_HOLD

    def leave(self) -> None:
        """A store was answered (or gave up)."""
        self.waiting -= 1
        if self.waiting == 0:
            self._calm_since = self._clock()

    async def answer(self, future: asyncio.Future[_T], timer: asyncio.TimerHandle) -> _T:
        """A store's answer, counted as waiting until it comes; `timer` (its timeout) cancelled then."""
        self.enter()
        try:
            return await future
        finally:
            timer.cancel()
            self.leave()

    def __call__(self) -> bool:
        if self.waiting > SATURATED:
            return True
        now = self._clock()
        if now >= self._until:
            return False
        return self.waiting > 0 or now - self._calm_since < CALM_AFTER


class IntakeWriter(Protocol):
    """What the webhook door stores through: `DeliveryWriter` (a thread of the server's), or
    `app.store.intake_process.ProcessDeliveryWriter` (a process of its own, on SQLite)."""

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    async def store_body(self, received: Received, body: bytes) -> Stored:
        """Read the body and store it durably (`UnreadableBody` when it is not a JSON object)."""
        ...

    def saturated(self) -> bool: ...

    def describe(self) -> str: ...


_Entry = tuple[IncomingDelivery, "asyncio.Future[bool]"]


class DeliveryWriter:
    """Group commit: a thread of its own writes whatever queued up while the last fsync ran.

    The thread takes the next batch as soon as the previous one is on disk, without waiting
    for the event loop, and hands each batch's outcome back to the loop in one callback.
    A store still waiting after `timeout` seconds fails with `StoreTimeoutError`: one still queued
    is withdrawn, one already being written may commit later (logged), and the writer's own
    connection gives up on a lock after the same time, so it goes on to the next batch.
    """

    def __init__(
        self, database: Database, *, max_batch: int = MAX_BATCH, timeout: float = STORE_TIMEOUT
    ) -> None:
        self._database = database
        self._max_batch = max_batch
        self._timeout = timeout
        self._pending: deque[_Entry] = deque()
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)
        self._closing = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._saturation = Saturation()
        self._checkpoints = WalCheckpointer(database) if database.is_sqlite else None

    async def start(self) -> None:
        """Start the writer thread."""
        self._loop = asyncio.get_running_loop()
        if self._checkpoints is not None:
            self._checkpoints.start()
        self._thread = threading.Thread(target=self._run, name="railyard-intake", daemon=True)
        self._thread.start()

    async def close(self) -> None:
        """Write what is queued, then stop."""
        with self._lock:
            self._closing = True
            self._ready.notify()
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join)
        if self._checkpoints is not None:
            await asyncio.to_thread(self._checkpoints.close)

    async def store(self, delivery: IncomingDelivery) -> bool:
        """Store durably; True if new, False if this delivery id was already stored.

        Raises `StoreTimeoutError` when the commit does not come within the writer's timeout.
        """
        if self._loop is None:
            raise RuntimeError("intake writer not started")
        future: asyncio.Future[bool] = self._loop.create_future()
        entry = (delivery, future)
        with self._lock:
            if self._closing:
                raise RuntimeError("intake is shutting down")
            self._pending.append(entry)
            if len(self._pending) == 1:
                self._ready.notify()
        timer = self._loop.call_later(self._timeout, self._give_up, entry)
        return await self._saturation.answer(future, timer)

    async def store_body(self, received: Received, body: bytes) -> Stored:
        """Read the body here (`row_of`) and store its row (`store`)."""
        delivery = row_of(received, body)
        return Stored(await self.store(delivery), delivery.status, delivery.last_error)

    def saturated(self) -> bool:
        """Whether the intake is flooded (`Saturation`)."""
        return self._saturation()

    def describe(self) -> str:
        """Where the commits happen, for `/healthz`."""
        return "thread"

    def _give_up(self, entry: _Entry) -> None:
        delivery, future = entry
        if future.done():
            return
        with self._lock:
            try:
                self._pending.remove(entry)  # not taken yet: it will never be written
                withdrawn = True
            except ValueError:
                withdrawn = False  # in the batch being written: it may still commit
        future.set_exception(StoreTimeoutError(self._timeout, delivery.delivery_id, withdrawn))

    def _next_batch(self) -> list[_Entry]:
        with self._lock:
            while not self._pending and not self._closing:
                self._ready.wait()
            size = min(len(self._pending), self._max_batch)
            return [self._pending.popleft() for _ in range(size)]

    def _run(self) -> None:
        assert self._loop is not None
        connection: Any = None
        while batch := self._next_batch():
            try:
                if connection is None:
                    connection = writer_connection(self._database, self._timeout)
                inserted = write_batch(self._database, [delivery for delivery, _ in batch], connection)
            except Exception as error:  # the callers answer 503; nothing was acknowledged
                if connection is not None:
                    discard(connection)  # a broken connection is not reused
                    connection = None
                self._loop.call_soon_threadsafe(_settle, batch, None, error)
                continue
            self._loop.call_soon_threadsafe(_settle, batch, inserted, None)
        if connection is not None:
            connection.close()


def writer_connection(database: Database, timeout: float = STORE_TIMEOUT) -> Any:
    """The intake writer's own connection, out of the pool: it waits for a lock no longer than
    a request waits for its answer, so a locked database fails the batch instead of holding
    the writer (and every delivery queued behind it) until the lock goes."""
    connection = database.engine.raw_connection()
    connection.detach()
    cursor = connection.cursor()
    wait_ms = max(1, int(timeout * 1000))
    if database.is_sqlite:
        cursor.execute(f"PRAGMA busy_timeout={min(wait_ms, BUSY_TIMEOUT_MS)}")
        cursor.execute("PRAGMA wal_autocheckpoint=0")  # app.store.checkpoints takes them
    else:
        cursor.execute(f"SET lock_timeout = {wait_ms}")
        # Beyond GitHub's 10 s no answer is in time; a stalled statement gives the writer back.
        cursor.execute(f"SET statement_timeout = {max(wait_ms, GITHUB_WAITS_MS)}")
        connection.commit()
    cursor.close()
    return connection


def discard(connection: Any) -> None:
    """Close a writer's connection (detached from the pool, so the driver's own closes); a
    broken one may raise on the way, which changes nothing."""
    with contextlib.suppress(Exception):
        connection.close()


def _settle(batch: list[_Entry], inserted: list[bool] | None, error: Exception | None) -> None:
    for index, (delivery, future) in enumerate(batch):
        if future.done():  # the request went away or timed out; its delivery is stored all the same
            if inserted is not None and inserted[index] and not future.cancelled():
                log_late_commit(delivery.delivery_id, delivery.event, future)
            continue
        if inserted is None:
            future.set_exception(error or RuntimeError("intake write failed"))
        else:
            future.set_result(inserted[index])


def log_late_commit(delivery_id: str, event: str, future: asyncio.Future[Any]) -> None:
    """Say that a delivery whose store timed out (answered 503) was committed after all."""
    if isinstance(future.exception(), StoreTimeoutError):
        log.warning(
            "a delivery answered 503 was stored after all; its redelivery will be answered 200",
            delivery_id=delivery_id,
            github_event=event,
        )


class RejectionLog:
    """Logs refused webhooks: at most one line per reason every `every` seconds.

    Each line counts the refusals of that reason it stands for since the last line, so a
    flood of unsigned requests costs a line a minute, and a wrong secret still shows.
    Reasons are railyard's own fixed texts, so the table stays small.
    """

    def __init__(self, every: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._every = every
        self._clock = clock
        self._last: dict[str, tuple[float, int]] = {}  # reason -> (time of the last line, refusals since)

    def refused(self, reason: str, status: int, **fields: Any) -> None:
        """Count one refusal, and log it unless a line for `reason` went out less than `every` ago."""
        now = self._clock()
        last = self._last.get(reason)
        if last is not None and now - last[0] < self._every:
            self._last[reason] = (last[0], last[1] + 1)
            return
        self._last[reason] = (now, 0)
        suppressed = last[1] if last is not None else 0
        log.warning(
            "webhook refused", reason=reason, status=status, suppressed_since_last=suppressed, **fields
        )
