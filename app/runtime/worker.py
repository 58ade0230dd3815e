"""The worker: takes stored deliveries off the queue and runs their handlers.

Transient failures are retried with exponential backoff and full jitter (about an hour of
tries), then marked failed; any other exception, a payload that cannot be decoded included,
marks the delivery failed at once, with the error, for an operator to see (`railyard
deliveries --status failed`) and re-run (`railyard redeliver ID`); so does a claim past the
last try, all of whose runs ended with no outcome (a delivery that kills its process). Leases are short
(`LEASE_SECONDS`) and renewed every third of that while the handlers run, so no other worker
takes over a delivery whose first run is alive, and one whose process died is taken over
within a lease. A renewal that finds the lease taken stops the handlers: the new holder
runs the delivery, and the old run records no outcome (the queue's and the tickets'
optimistic checks refuse a late one anyway). The loop itself is supervised
(`app.runtime.supervisor`): a claim the database cannot answer is backed off, not fatal.
"""

from __future__ import annotations

import asyncio
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field

import structlog
from sqlalchemy.exc import OperationalError

from app.contracts.traces import TRACING, Attribute, SpanKind, set_attribute, span
from app.contracts.webhook_payloads import read_payload
from app.runtime.idle_polls import IdlePolls
from app.runtime.metrics import Metrics, event_label
from app.runtime.supervisor import Loop, RetryPolicy
from app.store.database import Database, NotNowError
from app.store.delivery_status import DONE, FAILED, IGNORED
from app.store.effects import watch_enqueued
from app.store.hops import off_loop
from app.store.installations import DELETED, SUSPENDED
from app.store.queue import (
    LEASE_SECONDS,
    ClaimedDelivery,
    DeliveryQueue,
    queue_depth,
    worker_name,
)
from handlers.errors import TransientError
from handlers.ports import Services
from handlers.routing import Router, WebhookEvent

log = structlog.get_logger(__name__)

CHAINED_AT_MOST = 16
"""Deliveries of one ordering key a task runs in a row, each leased as the one before it was
recorded (SQLite), before it goes back to the queue's claim: the claim takes the oldest first
across keys, so one key's long run (a storm of one commit's check runs) delays another ticket's
command by at most this many deliveries a slot."""
CLAIM_HERE_PAUSE = 1.0
"""Seconds the worker claims on a thread after a claim on the event loop ran past its budget."""


@dataclass
class Worker:
    """One worker loop; `concurrency` deliveries (of different tickets) at a time."""

    database: Database
    services: Services  # the handlers' ports
    router: Router
    metrics: Metrics
    clock: Callable[[], float] = time.time
    concurrency: int = 4
    lease_seconds: float = LEASE_SECONDS
    poll_seconds: float = 0.2
    idle_poll_max_seconds: float = 2.0
    claim_gap_seconds: float = 0.01
    intake_busy: Callable[[], bool] | None = None
    yield_seconds: float = 0.25
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    name: str = field(default_factory=worker_name)
    stuck_after: float = 30.0
    processed: Callable[[], None] | None = None
    """Called after a delivery that enqueued effects is recorded (the process's outbox: they are due)."""

    def __post_init__(self) -> None:
        self.queue = DeliveryQueue(self.database, owner=self.name, lease_seconds=self.lease_seconds)
        self._wakeup = asyncio.Event()
        self._last_claim = 0.0
        self._running: set[asyncio.Task[None]] = set()
        self._stop = asyncio.Event()  # the loop's, once it runs (`_step`)
        self._claims_here_from = 0.0  # monotonic time from which a claim may run on the loop again
        self._polls = IdlePolls(self.poll_seconds, self.idle_poll_max_seconds, clock=self.clock)

    def notify(self) -> None:
        """A delivery was stored: look at the queue now rather than at the next poll."""
        self._polls.woken()
        self._wakeup.set()

    def loop(self) -> Loop:
        """The worker as a supervised loop: a failed claim (the database away) is backed off."""
        return Loop(
            "worker",
            self._step,
            interval=self.poll_seconds,
            stuck_after=self.stuck_after,
            wait=lambda stop: self._idle(stop, self._running),
            finish=self._finish_running,
        )

    async def run(self, stop: asyncio.Event) -> None:
        """Process deliveries until `stop` is set; in-flight deliveries finish first."""
        await self.loop().run(stop)

    async def _step(self, stop: asyncio.Event) -> bool:
        """Claim what fits; True when more may be claimable at once."""
        self._stop = stop
        free = self.concurrency - len(self._running)
        if free and await self._yield_to_intake(stop):
            free = 1  # still flooded: one delivery per yield, so processing never stops
        self._last_claim = time.monotonic()
        claimed = await self._claim(free) if free else []
        if free:
            self._polls.looked(bool(claimed))
        for delivery in claimed:
            task = asyncio.create_task(self.process(delivery), name=f"delivery-{delivery.delivery_id}")
            self._running.add(task)
            task.add_done_callback(self._settled)
        return bool(claimed) and len(self._running) < self.concurrency

    async def _claim(self, limit: int) -> list[ClaimedDelivery]:
        """Lease up to `limit` deliveries, on the event loop: on PostgreSQL through its asyncio
        connections; on SQLite when that can be done at once (`Database.bookkeeping_here`: no
        hop to a thread and back), else on a thread. A claim that ran past its budget there (a
        long queue of ordering keys) is not tried on the loop again for `CLAIM_HERE_PAUSE` seconds."""
        now = self.clock()
        if not self.database.is_sqlite:
            return await self.queue.claim_on_loop(now, limit)
        if time.monotonic() >= self._claims_here_from:
            try:
                return self.queue.claim_here(now, limit)
            except NotNowError as not_now:
                if not_now.over_budget:
                    self._claims_here_from = time.monotonic() + CLAIM_HERE_PAUSE
        return await off_loop(self.queue.claim, now, limit)

    def _settled(self, task: asyncio.Task[None]) -> None:
        """Forget a finished delivery task; one that raised (its outcome unrecorded) is logged.

        Its lease then expires and the delivery is taken up again.
        """
        self._running.discard(task)
        if not task.cancelled() and (error := task.exception()) is not None:
            log.error("could not record a delivery's outcome", task=task.get_name(), exc_info=error)

    async def _finish_running(self) -> None:
        if self._running:
            await asyncio.gather(*self._running, return_exceptions=True)

    async def _yield_to_intake(self, stop: asyncio.Event) -> bool:
        """Acknowledging comes first: while the intake is saturated, take new work less often;
        True when it still is after the wait.

        The intake and the worker share one process, one interpreter lock and, on SQLite, one
        database writer. GitHub gives up on a delivery not answered within 10 seconds and
        does not send it again, while a stored delivery only waits. So while `intake_busy`
        says deliveries are queueing for a commit, the worker waits (at most `yield_seconds`)
        before claiming, and then claims one delivery (a command costs the loop milliseconds
        of CPU the intake needs): under a flood it still takes new work several times a
        second, and at any other time it never waits.
        """
        if self.intake_busy is None:
            return False
        deadline = time.monotonic() + self.yield_seconds
        while self.intake_busy() and time.monotonic() < deadline and not stop.is_set():
            await asyncio.sleep(0.005)
        return self.intake_busy()

    async def _idle(self, stop: asyncio.Event, running: set[asyncio.Task[None]]) -> None:
        """Wait for a stored delivery, a finished task, stop, or the next poll (`IdlePolls`:
        sooner after work, up to `idle_poll_max_seconds` while looks find nothing).

        Under a burst every stored delivery notifies the worker; those notices are coalesced
        so the queue is looked at no more than once per `claim_gap_seconds`, while a finished
        task (whose ticket's next delivery may now be claimable) is acted on at once.
        """
        wakeup = asyncio.create_task(self._wakeup.wait())
        stopping = asyncio.create_task(stop.wait())
        try:
            timeout = self._polls.seconds()
            done, _ = await asyncio.wait(
                [wakeup, stopping, *running], timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
            gap = self._last_claim + self.claim_gap_seconds - time.monotonic()
            if done == {wakeup} and gap > 0:
                await asyncio.wait([stopping, *running], timeout=gap, return_when=asyncio.FIRST_COMPLETED)
        finally:
            wakeup.cancel()
            stopping.cancel()
        self._wakeup.clear()

    async def process(self, delivery: ClaimedDelivery) -> None:
        """Run one delivery's handlers and record the outcome on the queue; then, in the same
        task, each delivery of its ordering key that recording it leased (`_process`)."""
        following: ClaimedDelivery | None = delivery
        for chained in range(CHAINED_AT_MOST + 1):
            if following is None:
                return
            following = await self._traced(following, chain=chained < CHAINED_AT_MOST)

    async def _traced(self, delivery: ClaimedDelivery, chain: bool) -> ClaimedDelivery | None:
        """`_process`, in a span of the trace its intake began (stored with it: a retry after a
        restart continues it)."""
        if not TRACING.on:
            return await self._process(delivery, chain)
        attributes: dict[str, Attribute] = {
            "railyard.delivery": delivery.delivery_id,
            "railyard.attempt": delivery.attempt,
            "github.event": event_label(delivery.event),  # the header is not signed: a name railyard knows
        }
        with span("railyard.delivery", attributes, kind=SpanKind.CONSUMER, parent=delivery.traceparent):
            return await self._process(delivery, chain)

    def _chains(self) -> bool:
        """Whether a finished delivery may lease its key's next one at once (SQLite): not while
        stopping, nor while the intake is flooded (then new work waits its turn, `_step`)."""
        busy = self.intake_busy is not None and self.intake_busy()
        return self.database.is_sqlite and not self._stop.is_set() and not busy

    async def _process(self, delivery: ClaimedDelivery, chain: bool = False) -> ClaimedDelivery | None:
        """Run the handlers, record the outcome; with `chain`, the key's next delivery when
        recording it leased that one too (a run of one ticket's or one commit's deliveries then
        costs no claim each)."""
        following = None
        started, began = time.perf_counter(), self.clock()
        enqueued = watch_enqueued()  # this delivery's task's own context
        with structlog.contextvars.bound_contextvars(
            delivery_id=delivery.delivery_id, github_event=delivery.event, action=delivery.action
        ):
            ran = await self._run_holding_lease(delivery)
            if ran is None:
                log.warning(
                    "lease lost while the handlers ran; stopped them, another worker has the delivery"
                )
                self.metrics.processed.labels(delivery.event, "lease_lost").inc()
                return None
            status, note, retry_at = ran
            now = self.clock()
            if retry_at is not None:
                status = "retry"
                kept = await self.queue.retry_on_loop(delivery, retry_at, note or "", began)
                self._polls.due_at(retry_at)
            else:
                chain = chain and self._chains()
                completing = self.queue.complete_on_loop(delivery, status, now, note, began, chain=chain)
                kept, following = await completing
            if not kept:
                log.warning("lease lost before the outcome was recorded; another worker took it over")
            if enqueued[0] and self.processed is not None:
                self.processed()
            set_attribute("railyard.outcome", status)
            self.metrics.processed.labels(delivery.event, status).inc()
            self.metrics.processing_seconds.labels(delivery.event).observe(time.perf_counter() - started)
        return following

    async def _run_holding_lease(
        self, delivery: ClaimedDelivery
    ) -> tuple[str, str | None, float | None] | None:
        """The handlers' result, with the lease renewed while they run; None when it was lost.

        Both are tasks of this one, and both are awaited whatever happens (cancelled included):
        the heartbeat never outlives the handlers, nor the handlers a lost lease.
        """
        handlers = asyncio.create_task(self._dispatch(delivery), name=f"handlers-{delivery.delivery_id}")
        heartbeat = asyncio.create_task(self._keep_lease(delivery), name=f"lease-{delivery.delivery_id}")
        try:
            await asyncio.wait((handlers, heartbeat), return_when=asyncio.FIRST_COMPLETED)
        finally:
            heartbeat.cancel()
            if not handlers.done():  # the lease was lost (or this process is stopping)
                handlers.cancel()
            await asyncio.gather(handlers, heartbeat, return_exceptions=True)
        if handlers.cancelled():
            return None
        return handlers.result()

    async def _keep_lease(self, delivery: ClaimedDelivery) -> None:
        """Renew the lease every third of it while the handlers run; return once it is lost.

        A renewal the database cannot take is logged and tried again at the next beat: the
        lease lapses only when this process stops renewing it (it died or hangs), and even
        then stays this claim's until another claim takes it.
        """
        while True:
            await asyncio.sleep(self.lease_seconds / 3)
            try:
                held = await off_loop(self.queue.extend, delivery, self.clock())
            except Exception as error:
                log.warning("could not renew a delivery's lease", error=str(error))
                continue
            if not held:
                return

    async def _dispatch(self, delivery: ClaimedDelivery) -> tuple[str, str | None, float | None]:
        """(final status, note, retry time): a retry time means "try again then"."""
        if delivery.attempt > self.retry.max_attempts:
            # Every try so far ended with no outcome recorded (the process died, or the lease
            # was lost, each time): failed visibly instead of holding its ticket's queue for ever.
            log.error("giving up: no outcome recorded in any try", attempts=delivery.attempt - 1)
            return FAILED, f"gave up: no outcome recorded in {delivery.attempt - 1} tries", None
        handlers = self.router.handlers_for(delivery.event, delivery.action)
        if not handlers or delivery.payload is None:
            return IGNORED, None, None
        if self._uninstalled(delivery):
            status, changes_ahead = await self.queue.installation_now(delivery)
            if changes_ahead:  # an `unsuspend` received before it may still be processed
                return self._backoff(delivery, TransientError("the installation's earlier event comes first"))
            if status in (DELETED, SUSPENDED):
                return IGNORED, "installation removed or suspended", None
        try:
            # Decoding is inside: a payload that cannot be read fails its delivery, not the worker.
            event = WebhookEvent(
                delivery.delivery_id,
                delivery.event,
                delivery.action,
                delivery.installation_id,
                read_payload(delivery.payload),
                delivery.received_at,
            )
            for handler in handlers:
                await handler(event, self.services)
        except (TransientError, OperationalError) as error:
            return self._backoff(delivery, error)
        except Exception as error:
            log.error("handler failed", exc_info=error)
            return FAILED, "".join(traceback.format_exception_only(error)).strip(), None
        log.debug("processed")
        return DONE, None, None

    @staticmethod
    def _uninstalled(delivery: ClaimedDelivery) -> bool:
        if delivery.installation_id is None or delivery.event.startswith("installation"):
            return False
        return delivery.installation_status in (DELETED, SUSPENDED)

    def _backoff(self, delivery: ClaimedDelivery, error: Exception) -> tuple[str, str | None, float | None]:
        note = f"{type(error).__name__}: {error}"
        if delivery.attempt >= self.retry.max_attempts:
            log.error("giving up after retries", attempts=delivery.attempt, error=note)
            return FAILED, f"gave up after {delivery.attempt} attempts: {note}", None
        at = self.clock() + self.retry.delay(delivery.attempt)
        if isinstance(error, TransientError) and error.retry_at is not None:
            at = max(at, error.retry_at)
        log.warning(
            "transient failure; will retry", attempt=delivery.attempt, retry_in=round(at - time.time(), 1)
        )
        return "retry", note, at

    async def refresh_gauges(self) -> tuple[int, float]:
        """Update the queue gauges (on each scrape and health check); return depth and lag."""
        depth, oldest = await off_loop(queue_depth, self.database)
        lag = max(0.0, time.time() - oldest) if oldest else 0.0
        self.metrics.queue_depth.set(depth)
        self.metrics.queue_lag.set(lag)
        return depth, lag
