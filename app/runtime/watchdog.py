"""The claim watchdog's shell: signs of life stored, claimed attempts checked, overdue recorded.

Signs of life (the claimant's comments on the issue, pushes to the attempt's branch,
deliveries) are kept as the latest per (ticket, attempt) in `signs_of_life`, moved only
forward in time. `check_claims` reads every claimed, open ticket, asks the pure
`policies.watchdog.overdue` about its current attempt, and records `claim_overdue` through
the one door with an operation id per silence period, so however often it runs (the
server every minute, `railyard check` from cron) each period is recorded once.
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
from app.store.signs import Unwatchable, Watched, watched_claims
from app.store.tickets import EffectsFor, TicketService
from policies.model import TicketKey
from policies.notices import WATCHDOG_ACTOR, NoticeContext, OverdueObserved, overdue_operation_id
from policies.watchdog import Silence, overdue

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
    """One look at every claimed ticket: the overdue claims, and the tickets that could not be checked."""

    overdue: list[OverdueClaim]
    failed: list[FailedTicket]


def watch_claims(
    database: Database,
    service: TicketService,
    now: datetime,
    *,
    repository: str | None = None,
    record: bool = True,
    effects: EffectsFor | None = None,
) -> WatchRound:
    """Every claimed ticket checked at `now`, each on its own: one that fails is logged and named,
    and never stops the others (a bad value in one repository must not blind the watchdog)."""
    found: list[OverdueClaim] = []
    failed: list[FailedTicket] = []
    with database.read() as connection:
        watched = watched_claims(connection, repository)
    for item in watched:
        if isinstance(item, Unwatchable):
            failed.append(_failed(item.ticket, item.ticket_id, item.error))
            continue
        try:
            claim = _check(service, item, now, record, effects)
        except Exception as error:
            failed.append(_failed(item.ticket.key, item.ticket_id, error))
            continue
        if claim is not None:
            found.append(claim)
    return WatchRound(found, failed)


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
) -> OverdueClaim | None:
    period = overdue(item.watch, now)
    if period is None:
        return None
    recorded = record and _record(service, item, period, now, effects)
    return OverdueClaim(item.ticket.key, period, period.overdue_by(now), recorded)


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
