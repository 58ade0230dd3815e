"""The stored webhook deliveries as a work queue.

A delivery is claimable when it is pending, due, not leased by a live worker, and it is
the oldest pending delivery of its ordering key (so one in backoff holds back later ones
for the same ticket, while different tickets proceed in parallel). Only each key's head is
looked at, through an index, so a long backlog for one ticket does not slow every claim.
Claims are leases: a worker that dies loses its lease when it expires and the delivery is
taken up again. On PostgreSQL, `FOR UPDATE SKIP LOCKED` lets any number of workers share the queue.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import socket
import time
from collections.abc import Generator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select, update

from app.store.connection_setup import commit_sqlite
from app.store.database import Database, NotNowError
from app.store.delivery_status import PENDING
from app.store.hops import off_loop
from app.store.queue_statements import (
    CLAIM_IN_WINDOW_POSTGRES,
    CLAIM_POSTGRES,
    CLAIM_WINDOW,
    CLAIMABLE_SQLITE,
    IN_WINDOW_SQLITE,
    INSERT_RUN,
    INSTALLATION_NOW,
    LEASE_SQLITE,
    LEASED_SQLITE,
    MAX_WINDOW,
    NEXT_OF_KEY_SQLITE,
    RUN_AFTER_CHANGE_POSTGRES,
    SQLITE_INDEX,
    WINDOW_POSTGRES,
    WINDOW_RESTS,
    WINDOW_SQLITE,
)
from app.store.tables import DeliveryRunRow, WebhookDeliveryRow, table

deliveries = table(WebhookDeliveryRow)
Lease = dict[str, Any]
"""A PostgreSQL claim's lease, taken as the rows are read: `until` and `owner`."""
Steps = Generator[tuple[str, dict[str, Any]], list[Any], list[Any]]
"""A claim's statements, given one at a time (the statement and its parameters), each sent back
its rows; what it returns is the claim's rows."""


def _run_steps(cursor: Any, steps: Steps) -> list[Any]:
    """Run a claim's statements on a driver cursor, one after the other; the claim's rows."""
    try:
        statement, parameters = next(steps)
        while True:
            statement, parameters = steps.send(list(cursor.execute(statement, parameters).fetchall()))
    except StopIteration as claimed:
        return list(claimed.value)


runs = table(DeliveryRunRow)


@contextmanager
def _raw(database: Database) -> Iterator[Any]:
    """A cursor on a pooled driver connection (SQLite: reads outside any write)."""
    connection = database.engine.raw_connection()
    try:
        yield connection.cursor()
    finally:
        connection.close()  # back to the pool


LEASE_SECONDS = 15.0
"""How long a claim lasts unless renewed. Its holder renews it every third of that while the
handlers run, so a live delivery keeps it however long it takes, and one leased by a process
that died is taken over within this long (SPEC: within 30 s on PostgreSQL, not after a minute)."""


def worker_name() -> str:
    """A name unique to this process, recorded on every lease it takes."""
    return f"{socket.gethostname()}:{os.getpid()}:{time.monotonic_ns() % 1_000_000}"


@dataclass(frozen=True)
class ClaimedDelivery:
    """A delivery leased to one worker; `attempt` counts from 1."""

    seq: int
    delivery_id: str
    event: str
    action: str | None
    installation_id: int | None
    payload: str | None
    attempt: int
    installation_status: str | None = None
    """The installation's status when the delivery was claimed (None: not known to railyard)."""
    received_at: float | None = None
    """When railyard received it (railyard's clock): a comment in it was written before then."""
    traceparent: str | None = None
    """The intake span's W3C traceparent: the worker's span continues that trace (None: off)."""


Finished = tuple[bool, "ClaimedDelivery | None"]
"""Whether the lease was still held when the outcome was written, and the delivery chained to it."""


class DeliveryQueue:
    """Claim, complete, retry and inspect stored deliveries."""

    def __init__(self, database: Database, *, owner: str, lease_seconds: float = LEASE_SECONDS) -> None:
        self.database = database
        self.owner = owner
        self.lease_seconds = lease_seconds
        self._claimable_sqlite = CLAIMABLE_SQLITE.format(pending=SQLITE_INDEX)
        self._window_rests = 0  # claims left that walk every key without trying the window
        self._window = CLAIM_WINDOW  # the window's size that answered last

    def claim(self, now: float, limit: int) -> list[ClaimedDelivery]:
        """Lease up to `limit` claimable deliveries to this worker."""
        if self.database.is_sqlite:
            return self._claim_sqlite(now, limit)
        with self.database.bookkeeping_postgres() as cursor:
            rows = _run_steps(cursor, self._claimable(now, limit, self._lease(now)))
        return [self._claimed(row) for row in rows]

    async def claim_on_loop(self, now: float, limit: int) -> list[ClaimedDelivery]:
        """`claim` on PostgreSQL, on the event loop (`Database.bookkeep_on_loop`: no thread)."""
        steps = self._claimable(now, limit, self._lease(now))
        try:
            statement, parameters = next(steps)
            while True:
                rows = await self.database.bookkeep_on_loop(statement, parameters)
                statement, parameters = steps.send(rows)
        except StopIteration as claimed:
            return [self._claimed(row) for row in claimed.value]

    def _lease(self, now: float) -> Lease:
        # Candidates locked (SKIP LOCKED: another worker's are passed over) and leased by one
        # statement, committed by itself, straight to the driver: this runs for every delivery.
        return {"until": now + self.lease_seconds, "owner": self.owner}

    def _claim_sqlite(self, now: float, limit: int) -> list[ClaimedDelivery]:
        # Candidates come from a plain read (WAL readers never block the intake writer); the
        # lease is one conditional UPDATE, its own transaction and bookkeeping (see
        # Database.bookkeeping), so the single write lock is held for one statement and no
        # fsync: a row someone else leased meanwhile simply does not match. Straight to the
        # driver: this runs for every delivery, beside a busy intake.
        with _raw(self.database) as cursor:
            rows = _run_steps(cursor, self._claimable(now, limit))
        if not rows:
            return []
        with self.database.bookkeeping() as cursor:
            leased = self._lease_sqlite(cursor, rows, now)
        return [self._claimed(row) for row in rows if row[0] in leased]

    def claim_here(self, now: float, limit: int) -> list[ClaimedDelivery]:
        """`claim` on the event loop (SQLite), all at once or `NotNowError` with nothing leased
        (`Database.bookkeeping_here`): the candidates read, then leased in one transaction
        (the UPDATE checks again that each is free, and the leased ones are read back)."""
        with self.database.bookkeeping_here() as cursor:
            rows = _run_steps(cursor, self._claimable(now, limit))
            if not rows:
                return []
            cursor.execute("BEGIN IMMEDIATE")
            leased = self._lease_sqlite(cursor, rows, now)
            commit_sqlite(cursor)
        return [self._claimed(row) for row in rows if row[0] in leased]

    def _claimable(self, now: float, limit: int, lease: Lease | None = None) -> Steps:
        """Up to `limit` claimable deliveries' rows, oldest first: from the window of the oldest
        pending ones (`CLAIM_WINDOW`) when that is enough to know, else from every key's head.
        `lease` (PostgreSQL's claims; None on SQLite): its `until` and `owner`, taken by the
        statement that reads them. The statements are given to the caller to run one by one
        (`Steps`), on a thread's cursor or on the event loop."""
        walk = self._claimable_sqlite if lease is None else CLAIM_POSTGRES
        if self._window_rests:
            self._window_rests -= 1
            return (yield walk, {"now": now, "limit": limit, **(lease or {})})
        size = self._window
        while True:
            rows, enough = yield from self._from_window(now, limit, size, lease)
            if enough:
                self._window = size
                return rows
            if size >= MAX_WINDOW:
                break
            size = min(size * 4, MAX_WINDOW)
        self._window, self._window_rests = CLAIM_WINDOW, WINDOW_RESTS
        return (yield walk, {"now": now, "limit": limit, **(lease or {})})

    @staticmethod
    def _from_window(
        now: float, limit: int, size: int, lease: Lease | None
    ) -> Generator[tuple[str, dict[str, Any]], list[Any], tuple[list[Any], bool]]:
        """The claimable heads among the `size` oldest pending deliveries, and whether they are
        the answer (enough of them, or every pending delivery was in the window; with a `lease`
        also any at all: those are leased already)."""
        sqlite = lease is None
        window = yield (WINDOW_SQLITE if sqlite else WINDOW_POSTGRES), {"window": size}
        seen: set[str] = set()
        heads: list[int] = []
        for seq, key in window:
            if key is None or key not in seen:
                heads.append(seq)
                if key is not None:
                    seen.add(key)
        full = len(window) == size
        if full and len(heads) < limit:  # not enough however many are due
            return [], False
        rows: list[Any] = []
        if heads:
            statement = IN_WINDOW_SQLITE if sqlite else CLAIM_IN_WINDOW_POSTGRES
            seqs = json.dumps(heads) if sqlite else heads
            rows = yield statement, {"now": now, "limit": limit, "seqs": seqs, **(lease or {})}
        return rows, len(rows) >= limit or not full or (lease is not None and bool(rows))

    def _lease_sqlite(self, cursor: Any, rows: Sequence[Sequence[Any]], now: float) -> set[int]:
        """Lease the candidate rows still free; the seqs this claim now holds."""
        until = now + self.lease_seconds
        seqs = [row[0] for row in rows]
        marks = ",".join("?" * len(seqs))
        cursor.execute(LEASE_SQLITE.format(marks=marks), [until, self.owner, *seqs, now])
        mine = cursor.execute(LEASED_SQLITE.format(marks=marks), [*seqs, self.owner, until])
        return {row[0] for row in mine}

    @staticmethod
    def _claimed(row: Sequence[Any]) -> ClaimedDelivery:
        (
            seq,
            delivery_id,
            event,
            action,
            installation_id,
            payload,
            attempts,
            received,
            parent,
            installation_status,
        ) = row
        return ClaimedDelivery(
            seq,
            delivery_id,
            event,
            action,
            installation_id,
            payload,
            attempts + 1,
            installation_status,
            received,
            parent,
        )

    def _finish(
        self,
        claimed: ClaimedDelivery,
        values: dict[str, Any],
        outcome: str,
        started: float,
        here: bool,
        chain_at: float | None = None,
    ) -> Finished:
        # Straight to the driver, as bookkeeping: this runs for every delivery, and SQLAlchemy's
        # execution around the statements costs more than they do.
        if not self.database.is_sqlite:
            return self._finish_postgres(claimed, values, outcome, started), None
        # `here`: on the event loop, all of it or NotNowError with nothing written
        bookkeeping = self.database.bookkeeping_here() if here else self.database.bookkeeping()
        with bookkeeping as cursor:
            return self._finish_on(cursor, claimed, values, outcome, started, chain_at)

    def _finish_postgres(
        self, claimed: ClaimedDelivery, values: dict[str, Any], outcome: str, started: float
    ) -> bool:
        with self.database.bookkeeping_postgres() as cursor:
            cursor.execute(*self._finishing_postgres(claimed, values, outcome, started))
            row = cursor.fetchone()
        return bool(row[0])

    async def _finish_on_loop(
        self,
        claimed: ClaimedDelivery,
        values: dict[str, Any],
        outcome: str,
        started: float,
        chain_at: float | None = None,
    ) -> Finished:
        """`_finish` without blocking the event loop: PostgreSQL's statement on the loop's own
        connections; SQLite's on the loop when it can be done at once (`bookkeeping_here`),
        else on a thread."""
        if self.database.is_sqlite:
            with contextlib.suppress(NotNowError):
                return self._finish(claimed, values, outcome, started, here=True, chain_at=chain_at)
            on_thread = functools.partial(self._finish, here=False, chain_at=chain_at)
            return await off_loop(on_thread, claimed, values, outcome, started)
        finishing = self._finishing_postgres(claimed, values, outcome, started)
        rows = await self.database.bookkeep_on_loop(*finishing)
        return bool(rows[0][0]), None

    def _finishing_postgres(
        self, claimed: ClaimedDelivery, values: dict[str, Any], outcome: str, started: float
    ) -> tuple[str, dict[str, Any]]:
        """`_finish_on` as one statement, one round trip: the outcome, and the run's record
        saying whether the lease was still held when it was written."""
        assignments = ", ".join(f"{column} = %(new_{column})s" for column in values)
        change = (
            f"WITH changed AS (UPDATE webhook_deliveries SET lease_until = NULL, {assignments} "  # noqa: S608 - names from code
            "WHERE seq = %(seq)s AND lease_owner = %(worker)s AND attempts = %(attempt)s "
            "AND status = 'pending' RETURNING seq) " + RUN_AFTER_CHANGE_POSTGRES
        )
        parameters = {
            **{f"new_{column}": value for column, value in values.items()},
            "seq": claimed.seq,
            "worker": self.owner,
            "attempt": claimed.attempt,
            "outcome": outcome,
            "started_at": started,
            "finished_at": values.get("processed_at") or started,
        }
        return change, parameters

    def _finish_on(
        self,
        cursor: Any,
        claimed: ClaimedDelivery,
        values: dict[str, Any],
        outcome: str,
        started: float,
        chain_at: float | None = None,
    ) -> Finished:
        """SQLite: the outcome and the run's record, one transaction; False when the lease was
        lost. With `chain_at` (now), the key's next delivery, if due and free, leased in it too."""
        run = {
            "delivery_seq": claimed.seq,
            "worker": self.owner,
            "attempt": claimed.attempt,
            "outcome": outcome,
            "started_at": started,
            "finished_at": values.get("processed_at") or started,
        }
        assignments = ", ".join(f"{column} = ?" for column in values)
        change = (
            f"UPDATE webhook_deliveries SET lease_until = NULL, {assignments} "  # noqa: S608 - names from code
            "WHERE seq = ? AND lease_owner = ? AND attempts = ? AND status = 'pending'"
        )
        cursor.execute("BEGIN IMMEDIATE")
        cursor.execute(change, [*values.values(), claimed.seq, self.owner, claimed.attempt])
        kept: bool = cursor.rowcount == 1
        cursor.execute(INSERT_RUN, {**run, "lease_kept": kept})
        following = None
        if kept and chain_at is not None:
            rows = cursor.execute(NEXT_OF_KEY_SQLITE, {"finished": claimed.seq, "now": chain_at, "limit": 1})
            rows = rows.fetchall()
            if rows and self._lease_sqlite(cursor, rows, chain_at):
                following = self._claimed(rows[0])
        commit_sqlite(cursor)
        return kept, following

    def complete(
        self,
        claimed: ClaimedDelivery,
        status: str,
        now: float,
        note: str | None = None,
        started: float = 0.0,
        *,
        here: bool = False,
    ) -> bool:
        """Mark a delivery done, ignored or failed; False if the lease was lost meanwhile.

        `here`: on the event loop, SQLite only, all of it or `NotNowError` (`Database.bookkeeping_here`).
        """
        return self._finish(claimed, _completed(status, now, note), status, started or now, here)[0]

    async def complete_on_loop(
        self,
        claimed: ClaimedDelivery,
        status: str,
        now: float,
        note: str | None = None,
        started: float = 0.0,
        *,
        chain: bool = False,
    ) -> Finished:
        """`complete`, from the event loop without blocking it (`_finish_on_loop`). With `chain`
        (SQLite), the same transaction leases the key's next delivery when it is due and free:
        a run of one ticket's (or one commit's) deliveries costs one transaction each, not a
        claim and a finish; on PostgreSQL none is (the claim's statement takes it)."""
        values = _completed(status, now, note)
        return await self._finish_on_loop(claimed, values, status, started or now, now if chain else None)

    def retry(
        self, claimed: ClaimedDelivery, at: float, error: str, started: float = 0.0, *, here: bool = False
    ) -> bool:
        """Put a delivery back, due at `at`; later deliveries for its ticket wait behind it
        (`here` as for `complete`)."""
        return self._finish(claimed, _retried(at, error), "retry", started or at, here)[0]

    async def retry_on_loop(
        self, claimed: ClaimedDelivery, at: float, error: str, started: float = 0.0
    ) -> bool:
        """`retry`, from the event loop without blocking it (`_finish_on_loop`)."""
        return (await self._finish_on_loop(claimed, _retried(at, error), "retry", started or at))[0]

    async def installation_now(self, claimed: ClaimedDelivery) -> tuple[str | None, bool]:
        """The delivery's installation's status now (not when it was claimed), and whether one
        of the installation's own events received before it is still to be processed."""
        asked = (claimed.installation_id, f"installation:{claimed.installation_id}", claimed.seq)
        row = await self.database.point_read_here(INSTALLATION_NOW, asked)
        return (None, False) if row is None else (row[0], bool(row[1]))

    def extend(self, claimed: ClaimedDelivery, now: float) -> bool:
        """Renew the lease of a delivery still being processed; False when it is no longer this claim's.

        A lease that ran out (a renewal the database could not take in time) is still this
        claim's while nobody else claimed it; once another claim took it (another owner, or
        this process's own later attempt) it is lost for good.
        """
        with self.database.write() as connection:
            result = connection.execute(
                update(deliveries)
                .where(
                    deliveries.c.seq == claimed.seq,
                    deliveries.c.lease_owner == self.owner,
                    deliveries.c.attempts == claimed.attempt,
                    deliveries.c.status == PENDING,
                )
                .values(lease_until=now + self.lease_seconds)
            )
        return result.rowcount == 1


def _completed(status: str, now: float, note: str | None) -> dict[str, Any]:
    return {"status": status, "processed_at": now, "last_error": note}


def _retried(at: float, error: str) -> dict[str, Any]:
    return {"next_attempt_at": at, "last_error": error}


def release_all_leases(database: Database) -> int:
    """Free every lease (a single-process SQLite server at start: their holders are gone)."""
    with database.write() as connection:
        result = connection.execute(
            update(deliveries)
            .where(deliveries.c.status == PENDING, deliveries.c.lease_until.is_not(None))
            .values(lease_until=None, lease_owner=None)
        )
    return int(result.rowcount)


def queue_depth(database: Database) -> tuple[int, float | None]:
    """How many deliveries are pending, and when the oldest of them was received."""
    with database.read() as connection:
        row = connection.execute(
            select(func.count(), func.min(deliveries.c.received_at)).where(deliveries.c.status == PENDING)
        ).one()
    return int(row[0]), row[1]
