"""Blocking calls off the event loop (`app.store.hops`): answers, failures, order, context."""

from __future__ import annotations

import asyncio
import contextvars
import threading

import pytest

from app.store.hops import SHARED_THREADS, Lane, off_loop

who: contextvars.ContextVar[str] = contextvars.ContextVar("who", default="nobody")


async def test_off_loop_answers_on_another_thread_in_the_callers_context() -> None:
    who.set("the caller")

    answer = await off_loop(lambda a, b: (a + b, threading.current_thread().name, who.get()), 2, 3)

    assert answer == (5, "railyard-off-loop", "the caller")


async def test_a_failure_reaches_the_caller_and_the_pool_goes_on() -> None:
    def fail() -> None:
        raise ValueError("no such row")

    with pytest.raises(ValueError, match="no such row"):
        await asyncio.wait_for(off_loop(fail), timeout=5)
    assert await off_loop(int, "ff", base=16) == 255  # keywords pass through, as to_thread's do


async def test_calls_run_side_by_side_up_to_the_pool_size() -> None:
    """A call that blocks (a lock, a slow statement) does not hold up the others."""
    release = threading.Event()
    waiting = [asyncio.ensure_future(off_loop(release.wait, 5)) for _ in range(SHARED_THREADS - 1)]

    assert await asyncio.wait_for(off_loop(lambda: "not held up"), timeout=5) == "not held up"
    release.set()
    assert await asyncio.gather(*waiting) == [True] * (SHARED_THREADS - 1)


async def test_a_lane_runs_its_jobs_in_order_on_one_thread() -> None:
    lane = Lane("railyard-test-lane")
    seen: list[tuple[int, str]] = []
    try:
        for number in range(5):
            lane.post(lambda n: seen.append((n, threading.current_thread().name)), number)
        last = await lane.call(lambda: list(seen))
    finally:
        lane.close()

    assert last == [(n, "railyard-test-lane") for n in range(5)]


async def test_a_waiter_that_goes_away_leaves_the_lane_working() -> None:
    lane = Lane("railyard-test-lane")
    started, release = threading.Event(), threading.Event()

    def slow() -> str:
        started.set()
        release.wait(5)
        return "done anyway"

    loop = asyncio.get_running_loop()
    errors: list[dict[str, object]] = []
    loop.set_exception_handler(lambda _, context: errors.append(context))
    try:
        waiter = asyncio.ensure_future(lane.call(slow))
        await asyncio.to_thread(started.wait, 5)
        waiter.cancel()
        release.set()
        assert await lane.call(lambda: "next") == "next"
    finally:
        lane.close()
        loop.set_exception_handler(None)
    assert waiter.cancelled()
    assert errors == [], "the late answer was handed to a future nobody waits for"


async def test_a_call_whose_waiter_went_away_before_it_started_is_skipped() -> None:
    lane = Lane("railyard-test-lane")
    started, release = threading.Event(), threading.Event()
    ran: list[str] = []

    def block() -> bool:
        started.set()
        return release.wait(5)

    try:
        blocker = lane.call(block)
        await asyncio.to_thread(started.wait, 5)
        skipped = lane.call(ran.append, "should not run")
        skipped.cancel()
        release.set()
        await blocker
        assert await lane.call(lambda: list(ran)) == []
    finally:
        lane.close()


def test_a_closed_lane_takes_no_more_jobs() -> None:
    lane = Lane("railyard-test-lane")
    lane.post(len, "x")
    lane.close()

    with pytest.raises(RuntimeError, match="closed"):
        lane.post(len, "y")


def test_closing_a_lane_with_a_wait_returns_once_its_posted_jobs_have_run() -> None:
    """A read's end is posted, not awaited; a store closing before its database waits for it,
    so no connection goes back to a pool that was already disposed."""
    lane, ran = Lane("railyard-unit"), threading.Event()
    started = threading.Event()

    def slow_end() -> None:
        started.set()
        threading.Event().wait(0.3)
        ran.set()

    lane.post(slow_end)
    assert started.wait(5)
    lane.close(wait=5.0)
    assert ran.is_set()


def test_closing_a_lane_without_a_wait_returns_while_its_job_still_runs() -> None:
    lane = Lane("railyard-unit")
    started, release, finished = threading.Event(), threading.Event(), threading.Event()

    def job() -> None:
        started.set()
        release.wait(5)
        finished.set()

    lane.post(job)
    assert started.wait(5)
    lane.close()  # a close that waited would return only once the job had finished
    assert not finished.is_set()
    release.set()
