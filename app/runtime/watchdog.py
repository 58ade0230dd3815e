"""The watchdog's shell: signs of life stored, claims and deliveries checked, overdue recorded.

Signs of life (the claimant's comments on the issue, pushes to the attempt's branch,
deliveries) are kept as the latest per (ticket, attempt) in `signs_of_life`, moved only
forward in time. `watch_claims` reads every claimed, open ticket and asks the pure
`policies.watchdog` about its current attempt's two clocks (the silence, and the deadline
when `claims.max_attempt_hours` set one), and every delivered, open ticket about its wait
for a decision (`reviews.max_wait_hours`). It records `claim_overdue` (reason `silence` once
per silence period, `deadline` once per attempt) and `review_overdue` (once per delivery)
through the one door with those operation ids, so however often it runs (the server every
minute, `railyard check` from cron) each is recorded once. Each ticket is checked on its own.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import structlog

from app.runtime.supervisor import Loop
from app.store.database import Database
from app.store.signs import Unwatchable, Waiting, Watched, watched_claims, watched_deliveries
from app.store.tickets import EffectsFor, TicketService
from policies.model import TicketKey
from policies.notices import (
    WATCHDOG_ACTOR,
    Notice,
    NoticeContext,
    OverdueObserved,
    ReviewOverdueObserved,
    deadline_operation_id,
    overdue_operation_id,
    review_overdue_operation_id,
)
from policies.watchdog import DEADLINE, REVIEW, SILENCE, Silence, current_silence, deadline, overdue

log = structlog.get_logger(__name__)

# -- checking ---------------------------------------------------------------------------


@dataclass(frozen=True)
class OverdueClaim:
    """A claimed attempt silent past its limit, and whether this check recorded it."""

    ticket: TicketKey
    silence: Silence
    overdue_by: timedelta
    recorded: bool

    def to_json(self) -> dict[str, object]:
        """The `railyard check --json` item."""
        return {
            "ticket": str(self.ticket),
            "claimant": self.silence.claimant,
            "attempt": self.silence.attempt,
            "silent_since": self.silence.silent_since.isoformat(),
            "limit_minutes": self.silence.limit_minutes,
            "overdue_minutes": int(self.overdue_by.total_seconds() // 60),
            "recorded": self.recorded,
        }


@dataclass(frozen=True)
class Clock:
    """One watched clock at the time of looking: a claimed attempt's silence or deadline, or a
    delivery's wait for review; when it is due, and whether this look recorded it overdue."""

    ticket: TicketKey
    kind: str  # `silence`, `deadline` or `review`
    attempt: int
    person: str  # the claimant; for `review`, the runner who delivered
    since: datetime  # silent since; the attempt's opening; the delivery
    limit_minutes: int
    due_at: datetime
    overdue_by: timedelta
    recorded: bool = False

    @property
    def overdue(self) -> bool:
        """Whether the clock is past its due time."""
        return self.overdue_by > timedelta(0)

    def to_json(self) -> dict[str, object]:
        """The `railyard check --json` item."""
        since = {SILENCE: "silent_since", DEADLINE: "opened_at", REVIEW: "delivered_at"}[self.kind]
        return {
            "ticket": str(self.ticket),
            "kind": self.kind,
            "runner" if self.kind == REVIEW else "claimant": self.person,
            "attempt": self.attempt,
            since: self.since.isoformat(),
            "limit_minutes": self.limit_minutes,
            "due_at": self.due_at.isoformat(),
            "overdue": self.overdue,
            "overdue_minutes": max(0, int(self.overdue_by.total_seconds() // 60)),
            "recorded": self.recorded,
        }


@dataclass(frozen=True)
class FailedTicket:
    """A ticket the watchdog could not check this round, and the kind of error (the log has it all)."""

    ticket: TicketKey
    ticket_id: int
    error: str

    def to_json(self) -> dict[str, object]:
        """The `railyard check --json` item of a ticket that could not be checked."""
        return {"ticket": str(self.ticket), "failed": self.error}


@dataclass(frozen=True)
class WatchRound:
    """One look at every watched ticket: the overdue silences (`check_claims`), every clock
    (silences, deadlines, review waits; overdue or not), and the tickets that could not be checked."""

    overdue: list[OverdueClaim]
    failed: list[FailedTicket]
    clocks: list[Clock] = field(default_factory=list)

    @property
    def due(self) -> list[Clock]:
        """The clocks past their due time."""
        return [clock for clock in self.clocks if clock.overdue]


def watch_claims(
    database: Database,
    service: TicketService,
    now: datetime,
    *,
    repository: str | None = None,
    record: bool = True,
    effects: EffectsFor | None = None,
) -> WatchRound:
    """Every claimed and every delivered ticket checked at `now`, each on its own: one that fails
    is logged and named, and never stops the others (a bad value in one repository must not
    blind the watchdog)."""
    found: list[OverdueClaim] = []
    failed: list[FailedTicket] = []
    clocks: list[Clock] = []
    with database.read() as connection:
        watched = watched_claims(connection, repository)
        waiting = watched_deliveries(connection, repository)
    for item in [*watched, *waiting]:
        if isinstance(item, Unwatchable):
            failed.append(_failed(item.ticket, item.ticket_id, item.error))
            continue
        try:
            if isinstance(item, Waiting):
                clocks.append(_check_review(service, item, now, record, effects))
                continue
            claim, more = _check(service, item, now, record, effects)
        except Exception as error:
            failed.append(_failed(item.ticket.key, item.ticket_id, error))
            continue
        clocks.extend(more)
        if claim is not None:
            found.append(claim)
    clocks.sort(key=lambda clock: (clock.ticket.repository, clock.ticket.number, clock.kind))
    return WatchRound(found, failed, clocks)


def check_claims(
    database: Database,
    service: TicketService,
    now: datetime,
    *,
    repository: str | None = None,
    record: bool = True,
    effects: EffectsFor | None = None,
) -> list[OverdueClaim]:
    """The claims overdue at `now`; with `record`, each silence period's `claim_overdue` is recorded once."""
    return watch_claims(database, service, now, repository=repository, record=record, effects=effects).overdue


def _check(
    service: TicketService, item: Watched, now: datetime, record: bool, effects: EffectsFor | None
) -> tuple[OverdueClaim | None, list[Clock]]:
    """The attempt's silence (and its deadline, when it has one) at `now`, each recorded when past."""
    key, watch = item.ticket.key, item.watch
    silence = current_silence(watch)
    late = overdue(watch, now)
    recorded = late is not None and record and _record(service, item, late, now, effects)
    clocks = [
        Clock(
            key,
            SILENCE,
            watch.attempt,
            watch.claimant,
            silence.silent_since,
            silence.limit_minutes,
            silence.deadline,
            silence.overdue_by(now),
            recorded,
        )
    ]
    claim = OverdueClaim(key, late, late.overdue_by(now), recorded) if late is not None else None
    found = deadline(watch)
    if found is not None:
        past = now > found.due_at
        notice = OverdueObserved(
            watch.attempt,
            watch.claimant,
            silence.silent_since,
            silence.limit_minutes,
            reason=DEADLINE,
            deadline_at=found.due_at,
            max_attempt_hours=found.hours,
        )
        operation = deadline_operation_id(key.repository, key.number, watch.attempt)
        noted = (
            past and record and _notify(service, key, notice, operation, item.policy_version, now, effects)
        )
        clocks.append(
            Clock(
                key,
                DEADLINE,
                watch.attempt,
                watch.claimant,
                found.opened_at,
                int((found.due_at - found.opened_at).total_seconds() // 60),
                found.due_at,
                found.overdue_by(now),
                noted,
            )
        )
    return claim, clocks


def _check_review(
    service: TicketService, item: Waiting, now: datetime, record: bool, effects: EffectsFor | None
) -> Clock:
    """The delivery's wait for a decision at `now`, `review_overdue` recorded once when past it."""
    key, wait = item.ticket.key, item.wait
    due_at = wait.due_at
    past = now > due_at
    notice = ReviewOverdueObserved(
        wait.attempt, wait.runner, wait.delivered_at, wait.hours, wait.delivery, due_at
    )
    operation = review_overdue_operation_id(key.repository, key.number, wait.delivery)
    noted = past and record and _notify(service, key, notice, operation, item.policy_version, now, effects)
    minutes = int((due_at - wait.delivered_at).total_seconds() // 60)
    return Clock(
        key, REVIEW, wait.attempt, wait.runner, wait.delivered_at, minutes, due_at, now - due_at, noted
    )


def _notify(
    service: TicketService,
    key: TicketKey,
    notice: Notice,
    operation_id: str,
    policy_version: str,
    now: datetime,
    effects: EffectsFor | None,
) -> bool:
    """Record `notice` through the one door; True when this look recorded it (not a replay)."""
    context = NoticeContext(
        actor=WATCHDOG_ACTOR, operation_id=operation_id, at=now, policy_version=policy_version
    )
    outcome = service.execute(key, notice, context, effects=effects)
    if outcome.applied and not outcome.replayed and outcome.events:
        log.info("watchdog recorded", ticket=str(key), recorded=outcome.events[0].type.value)
        return True
    return False


def _failed(ticket: TicketKey, ticket_id: int, error: Exception) -> FailedTicket:
    log.error("watchdog could not check a ticket", ticket=str(ticket), ticket_id=ticket_id, exc_info=error)
    return FailedTicket(ticket, ticket_id, type(error).__name__)


def _record(
    service: TicketService, item: Watched, period: Silence, now: datetime, effects: EffectsFor | None
) -> bool:
    key = item.ticket.key
    context = NoticeContext(
        actor=WATCHDOG_ACTOR,
        operation_id=overdue_operation_id(key.repository, key.number, period.attempt, period.silent_since),
        at=now,
        policy_version=item.policy_version,
    )
    notice = OverdueObserved(period.attempt, period.claimant, period.silent_since, period.limit_minutes)
    outcome = service.execute(key, notice, context, effects=effects)
    if outcome.applied and not outcome.replayed:
        log.info("claim overdue", ticket=str(key), attempt=period.attempt, claimant=period.claimant)
        return True
    return False


@dataclass
class Watchdog:
    """Checks the claims every `every` seconds until stopped (the server's background task).

    A ticket that cannot be checked is named in `/healthz` (by its row id: the endpoint is
    unauthenticated, and a repository's name can be private) and counted, but does not make
    the watchdog unhealthy: the other tickets are still watched, and a liveness probe that
    restarted the server for one bad row would restart it for ever.
    """

    database: Database
    tickets: TicketService
    clock: Callable[[], float] = time.time
    every: float = 60.0
    effects: EffectsFor | None = None

    stuck_after: float = 600.0
    failed: list[FailedTicket] = field(default_factory=list)
    ticket_failures: int = 0

    def loop(self) -> Loop:
        """The watchdog as a supervised loop: a round that fails is logged and retried after a backoff."""
        return Loop(
            "watchdog",
            self._step,
            interval=self.every,
            stuck_after=max(self.stuck_after, 3 * self.every),
            detail=self.detail,
        )

    async def run(self, stop: asyncio.Event) -> None:
        """Loop until `stop`; a round that fails is logged and tried again."""
        await self.loop().run(stop)

    def detail(self) -> dict[str, object]:
        """What `/healthz` adds about the last round: the tickets it could not check."""
        return {
            "failed_tickets": [{"ticket_id": f.ticket_id, "error": f.error} for f in self.failed],
            "ticket_failures_total": self.ticket_failures,
        }

    async def _step(self, stop: asyncio.Event) -> bool:
        """One round: record the claims overdue now."""
        now = datetime.fromtimestamp(self.clock(), UTC)
        checked = await asyncio.to_thread(
            watch_claims, self.database, self.tickets, now, effects=self.effects
        )
        self.failed = checked.failed
        self.ticket_failures += len(checked.failed)
        return False
