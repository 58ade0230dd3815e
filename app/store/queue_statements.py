"""The work queue's statements (`app.store.queue`): the claim's walk over ordering keys, its
window of the oldest pending deliveries, the lease, and the outcome with its run's record, for
SQLite and for PostgreSQL's driver."""

from __future__ import annotations

import re

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
CLAIMABLE_SQLITE = (
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
SQLITE_INDEX = " INDEXED BY ix_webhook_deliveries_pending"
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
WINDOW_SQLITE = _WINDOW.format(index=" INDEXED BY ix_webhook_deliveries_status_seq", limit=":window")
WINDOW_POSTGRES = _WINDOW.format(index="", limit="%(window)s")
IN_WINDOW_SQLITE = (
    _CLAIMED_COLUMNS  # noqa: S608 - constants
    + "FROM webhook_deliveries d WHERE d.seq IN (SELECT value FROM json_each(:seqs)) AND"
    + _DUE
)
_IN_WINDOW = _CLAIMED_COLUMNS + "FROM webhook_deliveries d WHERE d.seq = ANY(:seqs) AND" + _DUE
NEXT_OF_KEY_SQLITE = (
    _CLAIMED_COLUMNS  # noqa: S608 - constants
    + "FROM webhook_deliveries d WHERE d.seq = (SELECT MIN(h.seq) FROM webhook_deliveries h"
    + SQLITE_INDEX
    + " WHERE h.status = 'pending' AND h.ordering_key = "
    "(SELECT f.ordering_key FROM webhook_deliveries f WHERE f.seq = :finished)) AND" + _DUE
)
"""SQLite: the head of a just finished delivery's ordering key (its next pending delivery, none
older being pending), if it is due and free: what `DeliveryQueue.complete_and_next` leases in the
finishing transaction. A delivery without a key has no next."""
INSTALLATION_NOW = (
    "SELECT (SELECT i.status FROM installations i WHERE i.id = ?), EXISTS (SELECT 1 FROM "
    "webhook_deliveries d WHERE d.status = 'pending' AND d.ordering_key = ? AND d.seq < ?)"
)
"""An installation's status now, and whether one of its own events received before a delivery
is still to be processed (pending: waiting, in backoff or running)."""
LEASE_SQLITE = (
    "UPDATE webhook_deliveries SET lease_until = ?, lease_owner = ?, attempts = attempts + 1 "
    "WHERE seq IN ({marks}) AND status = 'pending' AND (lease_until IS NULL OR lease_until < ?)"
)
LEASED_SQLITE = (
    "SELECT seq FROM webhook_deliveries WHERE seq IN ({marks}) AND lease_owner = ? AND lease_until = ?"
)
INSERT_RUN = (
    "INSERT INTO delivery_runs (delivery_seq, worker, attempt, outcome, lease_kept, started_at, finished_at) "
    "VALUES (:delivery_seq, :worker, :attempt, :outcome, :lease_kept, :started_at, :finished_at)"
)


def _psycopg(sql: str) -> str:
    """`sql` with psycopg's named parameters (`%(name)s`) for SQLite's (`:name`)."""
    return re.sub(r":(\w+)", r"%(\1)s", sql)


# After `WITH changed AS (UPDATE ... RETURNING seq)`: the run's record, the lease kept when the
# outcome was written.
RUN_AFTER_CHANGE_POSTGRES = (
    "INSERT INTO delivery_runs (delivery_seq, worker, attempt, outcome, lease_kept, started_at, finished_at) "
    "SELECT %(seq)s, %(worker)s, %(attempt)s, %(outcome)s, EXISTS (SELECT 1 FROM changed), "
    "%(started_at)s, %(finished_at)s RETURNING lease_kept"
)


def _leasing(claimable: str) -> str:
    """`claimable` (a SELECT of claimable deliveries that locks them, passing over those another
    worker holds) with their leases taken in the same statement, committed by itself: one round
    trip for a claim, where a transaction took five. The rows come back as they were read."""
    return (
        f"WITH claimable AS ({claimable}), leased AS ("  # noqa: S608 - constants only
        "UPDATE webhook_deliveries w SET lease_until = %(until)s, lease_owner = %(owner)s, "
        "attempts = w.attempts + 1 FROM claimable c WHERE w.seq = c.seq) "
        "SELECT * FROM claimable ORDER BY seq"
    )


CLAIM_POSTGRES = _leasing(_psycopg(_CLAIMABLE_POSTGRES.format(pending="")))
CLAIM_IN_WINDOW_POSTGRES = _leasing(_psycopg(_IN_WINDOW) + "FOR UPDATE OF d SKIP LOCKED")
