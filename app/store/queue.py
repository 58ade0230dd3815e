"""The stored webhook deliveries as a work queue.

A delivery is claimable when it is pending, due, not leased by a live worker, and it is
the oldest pending delivery of its ordering key (so one in backoff holds back later ones
for the same ticket, while different tickets proceed in parallel). Only each key's head is
looked at, through an index, so a long backlog for one ticket does not slow every claim.
Claims are leases: a worker that dies loses its lease when it expires and the delivery is
taken up again. On PostgreSQL, `FOR UPDATE SKIP LOCKED` lets any number of workers share the queue.
"""

from __future__ import annotations

import json
import os
import re
import socket
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, func, select, update

from app.store.database import Database, commit_sqlite
from app.store.tables import DeliveryRunRow, WebhookDeliveryRow, table

deliveries = table(WebhookDeliveryRow)
runs = table(DeliveryRunRow)

PENDING, DONE, IGNORED, FAILED = "pending", "done", "ignored", "failed"
REJECTED = "rejected"
"""Signed, but its payload does not have the shape of its event: kept for the audit, never processed."""
FINAL_STATUSES = (DONE, IGNORED, FAILED, REJECTED)

# Each ordering key's head is found by walking the partial index of pending deliveries from
# key to key (a recursive "skip scan"), so a claim costs one index probe per key with pending
# work however long any key's backlog is: a scan of every pending row took 26 ms with 21,000
# deliveries of one issue waiting, this takes 0.02 ms. Deliveries without a key have no order.
_HEADS = """
WITH RECURSIVE heads(ordering_key) AS (
    SELECT MIN(ordering_key) FROM webhook_deliveries{pending} WHERE status = 'pending'
    UNION ALL
    SELECT (
        SELECT MIN(k.ordering_key) FROM webhook_deliveries k{pending}
        WHERE k.status = 'pending' AND k.ordering_key > heads.ordering_key
    )
    FROM heads WHERE heads.ordering_key IS NOT NULL
)
"""
_CANDIDATES = """
    SELECT (
        SELECT MIN(h.seq) FROM webhook_deliveries h{pending}
        WHERE h.status = 'pending' AND h.ordering_key = heads.ordering_key
    ) AS seq
    FROM heads WHERE heads.ordering_key IS NOT NULL
    UNION ALL
    SELECT unordered.seq FROM (
        SELECT n.seq FROM webhook_deliveries n{pending}
        WHERE n.status = 'pending' AND n.ordering_key IS NULL AND n.next_attempt_at <= :now
          AND (n.lease_until IS NULL OR n.lease_until < :now)
        ORDER BY n.seq
        LIMIT :limit
    ) unordered
"""
_CLAIMED_COLUMNS = """
SELECT d.seq, d.delivery_id, d.event, d.action, d.installation_id, d.payload, d.attempts,
       d.received_at, d.traceparent,
       (SELECT i.status FROM installations i WHERE i.id = d.installation_id) AS installation_status
"""
_DUE = """
    d.status = 'pending' AND d.next_attempt_at <= :now AND (d.lease_until IS NULL OR d.lease_until < :now)
ORDER BY d.seq
LIMIT :limit
"""
# The few candidates are then read by primary key. (PostgreSQL, before its statistics catch
# up with a fast-growing queue, would otherwise hash every pending row: 15 ms at 30,000.)
_CLAIMABLE_SQLITE = (
    _HEADS
    + _CLAIMED_COLUMNS
    + f"FROM ({_CANDIDATES}) candidates JOIN webhook_deliveries d ON d.seq = candidates.seq WHERE"
    + _DUE
)
_CLAIMABLE_POSTGRES = (
    _HEADS
    + _CLAIMED_COLUMNS
    + f"FROM webhook_deliveries d WHERE d.seq = ANY(ARRAY({_CANDIDATES})) AND"
    + _DUE
    + "FOR UPDATE OF d SKIP LOCKED"
)
# SQLite's planner, without statistics, prefers the (status, seq) index and reads every row.
_SQLITE_INDEX = " INDEXED BY ix_webhook_deliveries_pending"
CLAIM_WINDOW = 8
"""How many of the oldest pending deliveries a claim looks at first. Among them the first of
each ordering key is its head (nothing older is pending), so when they hold enough claimable
heads, or are all there is, the claim needs no walk over every key (`_HEADS`), which costs about
5 µs a key: 14 ms with 3,000 keys waiting, as in a storm of check runs across many commits.
Deliveries in flight (leased, several workers' worth) keep their places in it, so a window that
is not enough is read again four times larger, up to `MAX_WINDOW`, and the size that answered is
kept for the next claim. When even that is not enough (one ticket's long backlog fills it), the
claim walks, the size goes back to `CLAIM_WINDOW`, and the next `WINDOW_RESTS` claims walk at
once, without reading a window first."""
MAX_WINDOW = 128
WINDOW_RESTS = 32
_WINDOW = (
    "SELECT seq, ordering_key FROM webhook_deliveries{index} "
    "WHERE status = 'pending' ORDER BY seq LIMIT {limit}"
)
_WINDOW_SQLITE = _WINDOW.format(index=" INDEXED BY ix_webhook_deliveries_status_seq", limit=":window")
_WINDOW_POSTGRES = _WINDOW.format(index="", limit="%(window)s")
_IN_WINDOW_SQLITE = (
    _CLAIMED_COLUMNS  # noqa: S608 - constants
    + "FROM webhook_deliveries d WHERE d.seq IN (SELECT value FROM json_each(:seqs)) AND"
    + _DUE
)
_IN_WINDOW = _CLAIMED_COLUMNS + "FROM webhook_deliveries d WHERE d.seq = ANY(:seqs) AND" + _DUE
_LEASE_SQLITE = (
    "UPDATE webhook_deliveries SET lease_until = ?, lease_owner = ?, attempts = attempts + 1 "
    "WHERE seq IN ({marks}) AND status = 'pending' AND (lease_until IS NULL OR lease_until < ?)"
)
_LEASED_SQLITE = (
    "SELECT seq FROM webhook_deliveries WHERE seq IN ({marks}) AND lease_owner = ? AND lease_until = ?"
)
# Leases and outcomes are bookkeeping (see Database.bookkeeping): PostgreSQL's way to commit
# them without waiting for the disk.
_BOOKKEEPING_POSTGRES = "SET LOCAL synchronous_commit = off"
_INSERT_RUN = (
    "INSERT INTO delivery_runs (delivery_seq, worker, attempt, outcome, lease_kept, started_at, finished_at) "
    "VALUES (:delivery_seq, :worker, :attempt, :outcome, :lease_kept, :started_at, :finished_at)"
)


def _psycopg(sql: str) -> str:
    """`sql` with psycopg's named parameters (`%(name)s`) for SQLite's (`:name`)."""
    return re.sub(r":(\w+)", r"%(\1)s", sql)


_INSERT_RUN_POSTGRES = _psycopg(_INSERT_RUN)
_CLAIMABLE_POSTGRES_RAW = _psycopg(_CLAIMABLE_POSTGRES.format(pending=""))
_IN_WINDOW_POSTGRES = _psycopg(_IN_WINDOW) + "FOR UPDATE OF d SKIP LOCKED"
_LEASE_POSTGRES = (
    "UPDATE webhook_deliveries SET lease_until = %s, lease_owner = %s, attempts = attempts + 1 "
    "WHERE seq = ANY(%s) AND status = 'pending' AND (lease_until IS NULL OR lease_until < %s)"
)


@contextmanager
def _raw(database: Database) -> Iterator[Any]:
    """A cursor on a pooled driver connection (autocommit: each statement is its own transaction)."""
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


class DeliveryQueue:
    """Claim, complete, retry and inspect stored deliveries."""

    def __init__(self, database: Database, *, owner: str, lease_seconds: float = LEASE_SECONDS) -> None:
        self.database = database
        self.owner = owner
        self.lease_seconds = lease_seconds
        self._claimable_sqlite = _CLAIMABLE_SQLITE.format(pending=_SQLITE_INDEX)
        self._window_rests = 0  # claims left that walk every key without trying the window
        self._window = CLAIM_WINDOW  # the window's size that answered last

    def claim(self, now: float, limit: int) -> list[ClaimedDelivery]:
        """Lease up to `limit` claimable deliveries to this worker."""
        if self.database.is_sqlite:
            return self._claim_sqlite(now, limit)
        # Candidates locked (SKIP LOCKED: another worker's are passed over) and leased in one
        # transaction, straight to the driver: this runs for every delivery.
        with _raw(self.database) as cursor:
            cursor.execute(_BOOKKEEPING_POSTGRES)
            rows = self._claimable(cursor, now, limit, sqlite=False)
            if rows:
                until = now + self.lease_seconds
                cursor.execute(_LEASE_POSTGRES, [until, self.owner, [row[0] for row in rows], now])
            cursor.connection.commit()
        return [self._claimed(row) for row in rows]

    def _claim_sqlite(self, now: float, limit: int) -> list[ClaimedDelivery]:
        # Candidates come from a plain read (WAL readers never block the intake writer); the
        # lease is one conditional UPDATE, its own transaction and bookkeeping (see
        # Database.bookkeeping), so the single write lock is held for one statement and no
        # fsync: a row someone else leased meanwhile simply does not match. Straight to the
        # driver: this runs for every delivery, beside a busy intake.
        with _raw(self.database) as cursor:
            rows = self._claimable(cursor, now, limit, sqlite=True)
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
            rows = self._claimable(cursor, now, limit, sqlite=True)
            if not rows:
                return []
            cursor.execute("BEGIN IMMEDIATE")
            leased = self._lease_sqlite(cursor, rows, now)
            commit_sqlite(cursor)
        return [self._claimed(row) for row in rows if row[0] in leased]

    def _claimable(self, cursor: Any, now: float, limit: int, *, sqlite: bool) -> list[Any]:
        """Up to `limit` claimable deliveries' rows, oldest first: from the window of the oldest
        pending ones (`CLAIM_WINDOW`) when that is enough to know, else from every key's head."""
        walk = self._claimable_sqlite if sqlite else _CLAIMABLE_POSTGRES_RAW
        if self._window_rests:
            self._window_rests -= 1
            return list(cursor.execute(walk, {"now": now, "limit": limit}).fetchall())
        size = self._window
        while True:
            rows, enough = self._from_window(cursor, now, limit, size, sqlite=sqlite)
            if enough:
                self._window = size
                return rows
            if size >= MAX_WINDOW:
                break
            size = min(size * 4, MAX_WINDOW)
        self._window, self._window_rests = CLAIM_WINDOW, WINDOW_RESTS
        return list(cursor.execute(walk, {"now": now, "limit": limit}).fetchall())

    @staticmethod
    def _from_window(
        cursor: Any, now: float, limit: int, size: int, *, sqlite: bool
    ) -> tuple[list[Any], bool]:
        """The claimable heads among the `size` oldest pending deliveries, and whether they are
        the answer (enough of them, or every pending delivery was in the window)."""
        window = cursor.execute(_WINDOW_SQLITE if sqlite else _WINDOW_POSTGRES, {"window": size}).fetchall()
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
            statement = _IN_WINDOW_SQLITE if sqlite else _IN_WINDOW_POSTGRES
            seqs = json.dumps(heads) if sqlite else heads
            rows = cursor.execute(statement, {"now": now, "limit": limit, "seqs": seqs}).fetchall()
        return rows, len(rows) >= limit or not full

    def _lease_sqlite(self, cursor: Any, rows: Sequence[Sequence[Any]], now: float) -> set[int]:
        """Lease the candidate rows still free; the seqs this claim now holds."""
        until = now + self.lease_seconds
        seqs = [row[0] for row in rows]
        marks = ",".join("?" * len(seqs))
        cursor.execute(_LEASE_SQLITE.format(marks=marks), [until, self.owner, *seqs, now])
        mine = cursor.execute(_LEASED_SQLITE.format(marks=marks), [*seqs, self.owner, until])
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
        self, claimed: ClaimedDelivery, values: dict[str, Any], outcome: str, started: float, here: bool
    ) -> bool:
        sqlite = self.database.is_sqlite
        # Two statements straight to the driver, as bookkeeping: this runs for every delivery,
        # and SQLAlchemy's execution around them costs more than they do.
        if here:  # on the event loop, all of it or NotNowError with nothing written
            bookkeeping = self.database.bookkeeping_here()
        else:
            bookkeeping = self.database.bookkeeping() if sqlite else _raw(self.database)
        with bookkeeping as cursor:
            return self._finish_on(cursor, sqlite, claimed, values, outcome, started)

    def _finish_on(
        self,
        cursor: Any,
        sqlite: bool,
        claimed: ClaimedDelivery,
        values: dict[str, Any],
        outcome: str,
        started: float,
    ) -> bool:
        """The outcome and the run's record, one transaction; False when the lease was lost."""
        run = {
            "delivery_seq": claimed.seq,
            "worker": self.owner,
            "attempt": claimed.attempt,
            "outcome": outcome,
            "started_at": started,
            "finished_at": values.get("processed_at") or started,
        }
        mark = "?" if sqlite else "%s"
        assignments = ", ".join(f"{column} = {mark}" for column in values)
        change = (
            f"UPDATE webhook_deliveries SET lease_until = NULL, {assignments} "  # noqa: S608 - names from code
            f"WHERE seq = {mark} AND lease_owner = {mark} AND attempts = {mark} AND status = 'pending'"
        )
        cursor.execute("BEGIN IMMEDIATE" if sqlite else _BOOKKEEPING_POSTGRES)
        cursor.execute(change, [*values.values(), claimed.seq, self.owner, claimed.attempt])
        kept: bool = cursor.rowcount == 1
        cursor.execute(_INSERT_RUN if sqlite else _INSERT_RUN_POSTGRES, {**run, "lease_kept": kept})
        if sqlite:
            commit_sqlite(cursor)
        else:
            cursor.connection.commit()
        return kept

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
        values = {"status": status, "processed_at": now, "last_error": note}
        return self._finish(claimed, values, status, started or now, here)

    def retry(
        self, claimed: ClaimedDelivery, at: float, error: str, started: float = 0.0, *, here: bool = False
    ) -> bool:
        """Put a delivery back, due at `at`; later deliveries for its ticket wait behind it
        (`here` as for `complete`)."""
        values = {"next_attempt_at": at, "last_error": error}
        return self._finish(claimed, values, "retry", started or at, here)

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


def list_deliveries(database: Database, status: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
    """The newest stored deliveries, optionally of one status."""
    statement = select(
        deliveries.c.delivery_id,
        deliveries.c.event,
        deliveries.c.action,
        deliveries.c.status,
        deliveries.c.attempts,
        deliveries.c.repository,
        deliveries.c.received_at,
        deliveries.c.processed_at,
        deliveries.c.last_error,
    ).order_by(deliveries.c.seq.desc())
    if status is not None:
        statement = statement.where(deliveries.c.status == status)
    with database.read() as connection:
        return [dict(row) for row in connection.execute(statement.limit(limit)).mappings()]


def requeue(database: Database, delivery_ids: Sequence[str], now: float) -> list[str]:
    """Process stored deliveries again (after a failure, or after an outage); returns those found.

    Re-running is safe: every state change is keyed by its operation id. A delivery rejected
    at the door (its payload is not of its event) is never processed, so it is not found.
    """
    found: list[str] = []
    with database.write() as connection:
        for delivery_id in delivery_ids:
            result = connection.execute(
                update(deliveries)
                .where(
                    deliveries.c.delivery_id == bindparam("b_id"),
                    deliveries.c.payload.is_not(None),
                    deliveries.c.status != REJECTED,
                )
                .values(status=PENDING, next_attempt_at=now, lease_until=None, lease_owner=None, attempts=0),
                {"b_id": delivery_id},
            )
            if result.rowcount:
                found.append(delivery_id)
    return found


def retry_waiting(database: Database, now: float) -> list[str]:
    """Make every delivery waiting for its next try due now (once an outage is over); their ids.

    Only deliveries a failed try put back are moved: the tries already counted stay counted, and
    one that a worker holds (its lease not yet run out) is left to it.
    """
    with database.write() as connection:
        rows = connection.execute(
            update(deliveries)
            .where(
                deliveries.c.status == PENDING,
                deliveries.c.next_attempt_at > now,
                deliveries.c.lease_until.is_(None),
                deliveries.c.attempts > 0,
            )
            .values(next_attempt_at=now)
            .returning(deliveries.c.delivery_id)
        )
        return [str(row.delivery_id) for row in rows]
