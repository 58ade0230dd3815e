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
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import structlog

from app.runtime.supervisor import Loop
from app.store.database import Database
from app.store.signs import Watched, watched_claims
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
    found = []
    with database.read() as connection:
        watched = watched_claims(connection, repository)
    for item in watched:
        period = overdue(item.watch, now)
        if period is None:
            continue
        recorded = record and _record(service, item, period, now, effects)
        found.append(OverdueClaim(item.ticket.key, period, period.overdue_by(now), recorded))
    return found


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
    """Checks the claims every `every` seconds until stopped (the server's background task)."""

    database: Database
    tickets: TicketService
    clock: Callable[[], float] = time.time
    every: float = 60.0
    effects: EffectsFor | None = None

    stuck_after: float = 600.0

    def loop(self) -> Loop:
        """The watchdog as a supervised loop: a round that fails is logged and retried after a backoff."""
        return Loop(
            "watchdog", self._step, interval=self.every, stuck_after=max(self.stuck_after, 3 * self.every)
        )

    async def run(self, stop: asyncio.Event) -> None:
        """Loop until `stop`; a round that fails is logged and tried again."""
        await self.loop().run(stop)

    async def _step(self, stop: asyncio.Event) -> bool:
        """One round: record the claims overdue now."""
        now = datetime.fromtimestamp(self.clock(), UTC)
        await asyncio.to_thread(check_claims, self.database, self.tickets, now, effects=self.effects)
        return False
