"""The delivery queue: which deliveries a worker may claim, leases, and finishing them."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from app.store import queue as queue_module
from app.store.database import Database
from app.store.delivery_status import DONE, REJECTED
from app.store.intake import IncomingDelivery, write_batch
from app.store.queue import ClaimedDelivery, DeliveryQueue, deliveries, runs
from app.store.queue_admin import list_deliveries, requeue, retry_waiting
from tests.conftest import sqlite_database

NOW = 1_800_000_000.0


def pending(delivery_id: str, key: str | None, received_at: float = NOW) -> IncomingDelivery:
    """A stored delivery waiting for the worker; `key` orders it among its ticket's deliveries."""
    return IncomingDelivery(
        delivery_id, "issues", "edited", 1, "acme/web", key, "pending", "{}", 2, received_at, received_at
    )


def ids(claimed: list[ClaimedDelivery]) -> list[str]:
    """The claimed deliveries' ids, in the order handed out."""
    return [delivery.delivery_id for delivery in claimed]


def test_only_the_oldest_pending_delivery_of_each_ticket_is_claimable(database: Database) -> None:
    write_batch(
        database,
        [
            pending("a1", "a"),
            pending("b1", "b"),
            pending("a2", "a"),
            pending("n1", None),
            pending("n2", None),
        ],
    )
    queue = DeliveryQueue(database, owner="w1")

    first = queue.claim(NOW, 10)
    assert ids(first) == ["a1", "b1", "n1", "n2"]
    assert queue.claim(NOW, 10) == [], "leased deliveries are not handed out twice"

    assert queue.complete(first[0], DONE, NOW)
    assert ids(queue.claim(NOW, 10)) == ["a2"]


def test_a_delivery_in_backoff_holds_back_its_ticket_but_not_others(database: Database) -> None:
    write_batch(database, [pending("a1", "a"), pending("a2", "a"), pending("b1", "b"), pending("b2", "b")])
    queue = DeliveryQueue(database, owner="w1", lease_seconds=60)  # b2 still leased when a1 is due
    a1, b1 = queue.claim(NOW, 10)

    assert queue.retry(a1, NOW + 30, "GitHub answered 502")
    assert queue.complete(b1, DONE, NOW)

    assert ids(queue.claim(NOW + 1, 10)) == ["b2"]
    again = queue.claim(NOW + 31, 10)
    assert ids(again) == ["a1"] and again[0].attempt == 2


def test_the_limit_takes_the_oldest_heads_first(database: Database) -> None:
    write_batch(database, [pending(f"k{n}", f"key{n % 7}", NOW + n) for n in range(30)])
    queue = DeliveryQueue(database, owner="w1")

    assert ids(queue.claim(NOW + 60, 3)) == ["k0", "k1", "k2"]
    assert ids(queue.claim(NOW + 60, 10)) == ["k3", "k4", "k5", "k6"]


def test_an_expired_lease_is_taken_over_and_the_late_finish_is_recorded_as_lost(database: Database) -> None:
    write_batch(database, [pending("a1", "a")])
    slow = DeliveryQueue(database, owner="slow", lease_seconds=10)
    fast = DeliveryQueue(database, owner="fast", lease_seconds=10)
    (mine,) = slow.claim(NOW, 1)

    assert fast.claim(NOW + 5, 1) == []
    (taken,) = fast.claim(NOW + 11, 1)
    assert taken.attempt == 2

    assert slow.complete(mine, DONE, NOW + 12) is False
    assert fast.complete(taken, DONE, NOW + 13) is True
    with database.read() as connection:
        outcomes = connection.execute(select(runs.c.worker, runs.c.lease_kept).order_by(runs.c.id)).all()
        status = connection.execute(select(deliveries.c.status)).scalar_one()
    assert [tuple(row) for row in outcomes] == [("slow", False), ("fast", True)]
    assert status == DONE


def watch_statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The kinds of statement every claim runs from now on: "window", "heads", "walk"."""
    ran: list[str] = []
    real_claimable = queue_module.DeliveryQueue._claimable

    def watched(self: DeliveryQueue, *arguments: Any) -> Any:
        steps = real_claimable(self, *arguments)
        rows = None
        try:
            while True:
                statement, parameters = steps.send(rows)  # type: ignore[arg-type]
                ran.append(
                    "walk" if "WITH RECURSIVE" in statement else "heads" if "d.seq" in statement else "window"
                )
                rows = yield statement, parameters
        except StopIteration as claimed:
            return claimed.value

    monkeypatch.setattr(queue_module.DeliveryQueue, "_claimable", watched)
    return ran


def test_a_storm_over_many_keys_is_claimed_oldest_first_from_the_window(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """3,000 check runs of 3,000 commits, three workers with 12 in flight: the oldest heads, as
    the walk over every key would give them, without that walk (the window had enough)."""
    write_batch(database, [pending(f"c{n}", f"acme/web@{n:05d}", NOW + n / 1000) for n in range(3000)])
    ran = watch_statements(monkeypatch)
    workers = [DeliveryQueue(database, owner=f"w{n}") for n in range(3)]
    in_flight = [delivery for queue in workers for delivery in queue.claim(NOW + 10, 4)]
    assert ids(in_flight) == [f"c{n}" for n in range(12)]
    assert workers[0].complete(in_flight[0], DONE, NOW + 10)
    assert ids(workers[0].claim(NOW + 10, 2)) == ["c12", "c13"]
    assert "walk" not in ran and ran.count("window") == 6, "the window, read larger once full of leases"


def test_after_a_walk_the_next_claims_walk_at_once_then_the_window_is_tried_again(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One ticket's backlog fills the window: the walk answers, and the window is not read
    again for `WINDOW_RESTS` claims (it would not be enough), then it is."""
    monkeypatch.setattr(queue_module, "CLAIM_WINDOW", 4)
    monkeypatch.setattr(queue_module, "MAX_WINDOW", 4)
    monkeypatch.setattr(queue_module, "WINDOW_RESTS", 3)
    write_batch(database, [pending(f"a{n}", "a", NOW + n / 1000) for n in range(10)])
    write_batch(database, [pending("b1", "b", NOW + 5)])
    ran = watch_statements(monkeypatch)
    queue = DeliveryQueue(database, owner="w1")
    assert ids(queue.claim(NOW + 10, 2)) == ["a0", "b1"]
    assert ran == ["window", "walk"], "too few heads in a full window: walked"
    for _ in range(3):
        assert queue.claim(NOW + 10, 2) == []
    assert ran[2:] == ["walk"] * 3, "resting: straight to the walk"
    queue.claim(NOW + 10, 2)
    assert ran[5] == "window", "then the window again"


def test_a_long_backlog_of_one_ticket_still_yields_the_other_tickets(database: Database) -> None:
    backlog = [pending(f"a{n}", "a", NOW + n / 1000) for n in range(2000)]
    write_batch(database, [*backlog, pending("b1", "b", NOW + 5)])
    queue = DeliveryQueue(database, owner="w1")

    assert ids(queue.claim(NOW + 10, 10)) == ["a0", "b1"]


SHIPPED_WINDOWS = (queue_module.CLAIM_WINDOW, queue_module.MAX_WINDOW)


@pytest.mark.parametrize("windows", [(1, 1), (3, 3), (1, 4), SHIPPED_WINDOWS])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    keys=st.lists(st.sampled_from(["a", "b", "c", None]), min_size=1, max_size=25),
    steps=st.lists(st.tuples(st.sampled_from(["done", "retry"]), st.integers(1, 4)), max_size=30),
)
def test_claims_follow_per_ticket_order_whatever_happens(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    windows: tuple[int, int],
    keys: list[str | None],
    steps: list[tuple[str, int]],
) -> None:
    """Against a model: a claim returns exactly the due heads of each key, oldest first, whether
    the window of the oldest pending deliveries answers it or the walk over every key does."""
    monkeypatch.setattr(queue_module, "CLAIM_WINDOW", windows[0])
    monkeypatch.setattr(queue_module, "MAX_WINDOW", windows[1])
    if windows != SHIPPED_WINDOWS:  # small windows: tried at every claim, never rested
        monkeypatch.setattr(queue_module, "WINDOW_RESTS", 0)
    database = sqlite_database(tmp_path_factory.mktemp("queue") / "railyard.db")
    try:
        write_batch(database, [pending(f"d{n}", key, NOW + n / 1000) for n, key in enumerate(keys)])
        model = [(f"d{n}", key) for n, key in enumerate(keys)]  # still pending, in order
        due_at: dict[str, float] = {}
        queue = DeliveryQueue(database, owner="w1")
        clock = NOW + 1
        for outcome, limit in steps:
            clock += 1
            heads: list[str] = []
            seen_keys: set[str] = set()
            for delivery_id, key in model:
                if key is not None and key in seen_keys:
                    continue
                if key is not None:
                    seen_keys.add(key)
                if due_at.get(delivery_id, 0.0) <= clock:
                    heads.append(delivery_id)
            claimed = queue.claim(clock, limit)
            assert ids(claimed) == heads[:limit]
            for delivery in claimed:
                if outcome == "done":
                    queue.complete(delivery, DONE, clock)
                    model = [entry for entry in model if entry[0] != delivery.delivery_id]
                else:
                    queue.retry(delivery, clock + 1.5, "transient")
                    due_at[delivery.delivery_id] = clock + 1.5
    finally:
        database.close()


def test_a_rejected_delivery_is_never_claimed_nor_requeued_but_is_listed(database: Database) -> None:
    """A payload not of its event stays rejected: `railyard redeliver` cannot send it to the worker."""
    rejected = pending("r1", "a")._replace(status=REJECTED, last_error="installation payload lacks x")
    write_batch(database, [rejected, pending("a1", "a")])
    queue = DeliveryQueue(database, owner="w1")

    assert ids(queue.claim(NOW, 10)) == ["a1"]
    assert requeue(database, ["r1"], NOW) == []
    assert queue.claim(NOW, 10) == []
    [listed] = list_deliveries(database, REJECTED)
    assert (listed["delivery_id"], listed["status"], listed["last_error"]) == (
        "r1",
        "rejected",
        "installation payload lacks x",
    )


def test_retry_waiting_makes_deliveries_in_backoff_due_now_and_leaves_held_ones(database: Database) -> None:
    """After an outage the waiting deliveries are claimable at once with their tries kept; one a
    worker still holds, and one never tried, are left as they were."""
    write_batch(database, [pending("a1", "a"), pending("b1", "b"), pending("c1", "c", NOW + 5)])
    queue = DeliveryQueue(database, owner="w1", lease_seconds=60)
    a1, b1 = queue.claim(NOW, 2)
    assert queue.retry(a1, NOW + 3600, "GitHub answered 502")

    assert retry_waiting(database, NOW + 1) == ["a1"]
    assert retry_waiting(database, NOW + 1) == [], "nothing is left waiting"
    again = queue.claim(NOW + 1, 10)
    assert ids(again) == ["a1"] and again[0].attempt == 2, "b1 is still held; c1 is not due yet"
    assert queue.complete(b1, DONE, NOW + 1), "the holder's lease was not touched"
