"""Supervised background loops: one failed iteration is logged and retried, never fatal.

Each long-lived loop (worker, outbox, watchdog, housekeeping) is a `Loop`: a step that does
one round of work, run again and again until stop. A step that raises is logged, counted,
and run again after an exponential backoff with full jitter, capped, so a database restart
or one odd answer from GitHub pauses the loop instead of ending it. Each loop records its
last good iteration, and `/healthz` reports a loop as unhealthy when it has not completed
one for longer than its `stuck_after` (failing, or hung) or when its task has ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog

log = structlog.get_logger(__name__)

Step = Callable[[asyncio.Event], Awaitable[bool]]
Wait = Callable[[asyncio.Event], Awaitable[None]]
Finish = Callable[[], Awaitable[None]]


def full_jitter(attempt: int, base: float, cap: float, rng: random.Random | None = None) -> float:
    """A delay drawn uniformly from [0, min(cap, base * 2**(attempt - 1))] ("full jitter")."""
    ceiling = min(cap, base * 2 ** max(attempt - 1, 0))
    return (rng or random).uniform(0.0, ceiling)


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with full jitter, then a visible failure.

    Thirty-two tries, each delay drawn from zero to a ceiling that doubles from 2 s up to five
    minutes, keep a delivery or an effect alive for 62 minutes on average (the expected delays
    sum to 3,705 s; in practice never less than half an hour), so an outage of GitHub or of the
    database shorter than that loses nothing.
    """

    max_attempts: int = 32
    base_seconds: float = 2.0
    cap_seconds: float = 300.0

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        """Seconds to wait before attempt `attempt + 1`."""
        return full_jitter(attempt, self.base_seconds, self.cap_seconds, rng)


async def _sleep_unless_stopped(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), timeout=seconds)


@dataclass
class Loop:
    """One supervised loop.

    `step(stop)` does one round and says whether more work is waiting (then it runs again at
    once); otherwise `wait(stop)` (by default: `interval` seconds or until stop) comes
    first. `finish()` runs once after stop (the worker lets in-flight deliveries end).
    """

    name: str
    step: Step
    interval: float
    stuck_after: float
    wait: Wait | None = None
    finish: Finish | None = None
    detail: Callable[[], dict[str, Any]] | None = None  # more for /healthz; never changes `healthy`
    backoff_base: float = 0.5
    backoff_cap: float = 30.0
    clock: Callable[[], float] = time.time
    started_at: float = 0.0
    last_ok: float | None = None
    last_error: str | None = None
    last_error_at: float | None = None
    last_activity: float = 0.0
    failures: int = 0
    iterations: int = 0
    ended: bool = False

    async def run(self, stop: asyncio.Event) -> None:
        """Run steps until `stop`; errors are logged and backed off, never raised."""
        self.started_at = self.last_activity = self.clock()
        try:
            while not stop.is_set():
                busy = await self._iterate(stop)
                if stop.is_set():
                    break
                if self.failures:
                    await _sleep_unless_stopped(stop, self._backoff())
                elif not busy:
                    await self._idle(stop)
                else:
                    await asyncio.sleep(0)  # let others run between busy rounds
        finally:
            if self.finish is not None:
                try:
                    await self.finish()
                except Exception:
                    log.exception("loop failed while stopping", loop=self.name)
            self.ended = True

    def beat(self) -> None:
        """Progress within a long iteration (the outbox after each effect): not stuck."""
        self.last_activity = self.clock()

    async def _iterate(self, stop: asyncio.Event) -> bool:
        try:
            busy = await self.step(stop)
        except Exception as error:
            self.beat()
            self.failures += 1
            # Only the kind of error: /healthz is unauthenticated, and a driver's message can
            # quote SQL parameters. The log has the whole error.
            self.last_error = type(error).__name__
            self.last_error_at = self.clock()
            log.warning(
                "loop iteration failed; backing off", loop=self.name, failures=self.failures, exc_info=error
            )
            return False
        if self.failures:
            log.info("loop recovered", loop=self.name, after_failures=self.failures)
        self.failures = 0
        self.iterations += 1
        self.last_ok = self.clock()
        self.beat()
        return busy

    async def _idle(self, stop: asyncio.Event) -> None:
        if self.wait is not None:
            await self.wait(stop)
        else:
            await _sleep_unless_stopped(stop, self.interval)

    def _backoff(self) -> float:
        return full_jitter(self.failures, self.backoff_base, self.backoff_cap)

    def report(self, now: float) -> dict[str, Any]:
        """This loop's state for `/healthz`.

        Unhealthy: it ended; or it has been failing with no good iteration for longer than
        `stuck_after`; or it is stuck, nothing finished or progressed for that long.
        """
        since = self.last_ok if self.last_ok is not None else self.started_at
        quiet = max(0.0, now - since) if since else 0.0
        stuck = bool(self.last_activity) and now - self.last_activity > self.stuck_after
        failing = self.failures > 0 and quiet > self.stuck_after
        healthy = not (self.ended or stuck or failing)
        report: dict[str, Any] = {
            "healthy": healthy,
            "last_ok_seconds_ago": round(quiet, 3) if self.last_ok is not None else None,
            "stuck_after_seconds": self.stuck_after,
            "consecutive_failures": self.failures,
        }
        if self.ended or stuck:
            report["ended" if self.ended else "stuck"] = True
        if self.failures and self.last_error is not None:
            report["last_error"] = self.last_error
        if self.detail is not None:
            report.update(self.detail())
        return report


@dataclass
class Supervisor:
    """Starts loops as tasks and stops them; stopping never raises, whatever a loop did."""

    loops: Sequence[Loop]
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    clock: Callable[[], float] = time.time
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)

    def start(self) -> None:
        """Start every loop as a task of its own."""
        for loop in self.loops:
            self._tasks.append(asyncio.create_task(loop.run(self.stop), name=f"railyard-{loop.name}"))

    async def close(self) -> None:
        """Stop every loop and wait for all of them; a loop's exception is logged, not raised."""
        self.stop.set()
        results = await asyncio.gather(*self._tasks, return_exceptions=True)
        for loop, result in zip(self.loops, results, strict=False):
            if isinstance(result, BaseException):
                log.error("loop ended with an error", loop=loop.name, exc_info=result)

    def report(self, now: float | None = None) -> tuple[bool, dict[str, Any]]:
        """(every loop healthy, each loop's report by name)."""
        now = self.clock() if now is None else now
        reports = {loop.name: loop.report(now) for loop in self.loops}
        return all(r["healthy"] for r in reports.values()), reports


class Supervised(Protocol):
    """A component that runs as a supervised loop (the worker, the outbox, the watchdog, housekeeping)."""

    def loop(self) -> Loop:
        """Its loop, ready to run."""
        ...


def supervise(*components: Supervised | None) -> Supervisor:
    """One supervisor for the given components (None: not running in this process)."""
    return Supervisor([component.loop() for component in components if component is not None])


async def close_all(*steps: Callable[[], Awaitable[None]] | None) -> None:
    """Run every closing step in order; one that fails is logged and the others still run."""
    for step in steps:
        if step is None:
            continue
        try:
            await step()
        except Exception:
            log.exception("a shutdown step failed")
