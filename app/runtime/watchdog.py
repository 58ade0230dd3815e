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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import structlog
from sqlalchemy import Connection, select, update
from sqlalchemy.dialects import postgresql, sqlite

from app.github.config import LoadedConfig
from app.runtime.supervisor import Loop
from app.store.codec import ticket_from_data
from app.store.database import Database
from app.store.tables import SignOfLifeRow, table
from app.store.tickets import EffectsFor, TicketService, attempts, normalize_key, tickets
from policies.events import Event, EventType
from policies.model import Ticket, TicketKey, same_account
from policies.notices import WATCHDOG_ACTOR, NoticeContext, OverdueObserved, overdue_operation_id
from policies.states import WorkState
from policies.watchdog import Silence, Watch, overdue, silence_limit, ticket_number_from_branch

log = structlog.get_logger(__name__)
signs_of_life = table(SignOfLifeRow)

# What a command's events say about the attempt they concern.
_COMMAND_SIGNS = {
    EventType.CLAIMED: "claim",
    EventType.SENT_BACK: "send-back",
    EventType.DELIVERED: "delivery",
}


@dataclass(frozen=True)
class Heard:
    """One sign of life (or an attempt opening) to store."""

    key: TicketKey
    attempt: int
    at: datetime
    kind: str
    source: str
    max_silence_minutes: int | None = None
    policy_version: str | None = None


def record_sign_of_life(database: Database, heard: Heard) -> bool:
    """Store the sign unless a later one is stored for the attempt; False when the issue is no ticket.

    The configuration (limit, policy version), when given, replaces the stored one.
    """
    key = normalize_key(heard.key)
    with database.write() as connection:
        ticket_id = connection.execute(
            select(tickets.c.id).where(tickets.c.repository == key.repository, tickets.c.number == key.number)
        ).scalar_one_or_none()
        if ticket_id is None:
            return False
        _upsert(connection, int(ticket_id), heard)
    return True


def _upsert(connection: Connection, ticket_id: int, heard: Heard) -> None:
    insert = sqlite.insert if connection.dialect.name == "sqlite" else postgresql.insert
    where = (signs_of_life.c.ticket_id == ticket_id, signs_of_life.c.attempt == heard.attempt)
    connection.execute(
        insert(signs_of_life)
        .values(
            ticket_id=ticket_id,
            attempt=heard.attempt,
            at=heard.at,
            kind=heard.kind,
            source=heard.source,
            max_silence_minutes=heard.max_silence_minutes,
            policy_version=heard.policy_version,
        )
        .on_conflict_do_nothing(index_elements=["ticket_id", "attempt"])
    )
    # Only forward in time: the condition is evaluated under the row lock, so racing writers
    # leave the latest sign, whatever order they commit in.
    connection.execute(
        update(signs_of_life)
        .where(*where, signs_of_life.c.at < heard.at)
        .values(at=heard.at, kind=heard.kind, source=heard.source)
    )
    if heard.max_silence_minutes is not None:
        connection.execute(
            update(signs_of_life)
            .where(*where)
            .values(max_silence_minutes=heard.max_silence_minutes, policy_version=heard.policy_version)
        )


def signs_from_events(
    key: TicketKey,
    events: Sequence[Event],
    at: datetime,
    source: str,
    max_silence_minutes: int,
    policy_version: str,
) -> list[Heard]:
    """The attempt openings and deliveries a command recorded, as signs to store."""
    return [
        Heard(
            key,
            int(e.data["attempt"]),
            at,
            _COMMAND_SIGNS[e.type],
            source,
            max_silence_minutes,
            policy_version,
        )
        for e in events
        if e.type in _COMMAND_SIGNS
    ]


def claimant_comment(
    ticket: Ticket | None, author: str, author_id: int, at: datetime, comment_id: int
) -> Heard | None:
    """A comment by the ticket's current claimant (the account, not the login) is a sign of life."""
    if ticket is None or ticket.attempt == 0 or ticket.claimant is None:
        return None
    if not same_account(author, author_id, ticket.claimant, ticket.claimant_id):
        return None
    return Heard(ticket.key, ticket.attempt, at, "comment", str(comment_id))


def push_signs(
    service: TicketService,
    repository: str,
    branch: str,
    on_branch: set[int],
    loaded: LoadedConfig,
    at: datetime,
    source: str,
) -> list[Heard]:
    """A push is a sign of life for each claimed ticket whose current attempt works on `branch`:
    named at `/claim branch=` or `/deliver`, or matching `tickets.branch_pattern`."""
    by_pattern = ticket_number_from_branch(loaded.config.tickets.branch_pattern, branch)
    numbers = on_branch | ({by_pattern} if by_pattern is not None else set())
    found = []
    for number in sorted(numbers):
        ticket = service.load(TicketKey(repository, number))
        if ticket is None or ticket.claimant is None or ticket.attempt == 0:
            continue
        if ticket.attempt_branch == branch or number == by_pattern:
            limit = loaded.config.claims.max_silence_minutes
            found.append(Heard(ticket.key, ticket.attempt, at, "push", source, limit, loaded.policy_version))
    return found


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
class _Watched:
    ticket: Ticket
    watch: Watch
    policy_version: str


def watched_claims(database: Database, repository: str | None = None) -> list[_Watched]:
    """Every claimed ticket whose issue is open, with its current attempt's watch."""
    statement = select(
        tickets.c.id, tickets.c.repository, tickets.c.number, tickets.c.revision, tickets.c.snapshot
    )
    statement = statement.where(tickets.c.work == WorkState.CLAIMED.value)
    if repository is not None:
        statement = statement.where(tickets.c.repository == repository.casefold())
    with database.read() as connection:
        rows = connection.execute(statement.order_by(tickets.c.repository, tickets.c.number)).all()
        ids = [row.id for row in rows]
        opened = {
            (r.ticket_id, r.number): r.opened_at
            for r in connection.execute(
                select(attempts.c.ticket_id, attempts.c.number, attempts.c.opened_at).where(
                    attempts.c.ticket_id.in_(ids)
                )
            )
        }
        signs = {
            (r.ticket_id, r.attempt): r
            for r in connection.execute(select(signs_of_life).where(signs_of_life.c.ticket_id.in_(ids)))
        }
    watched = []
    for row in rows:
        ticket = ticket_from_data(TicketKey(row.repository, row.number), row.revision, row.snapshot)
        opened_at = opened.get((row.id, ticket.attempt))
        if ticket.closed or ticket.claimant is None or opened_at is None:
            continue
        sign = signs.get((row.id, ticket.attempt))
        limit = silence_limit(ticket.check_in_minutes, sign.max_silence_minutes if sign else None)
        watch = Watch(ticket.attempt, ticket.claimant, opened_at, sign.at if sign else None, limit)
        watched.append(_Watched(ticket, watch, (sign.policy_version if sign else None) or ""))
    return watched


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
    for item in watched_claims(database, repository):
        period = overdue(item.watch, now)
        if period is None:
            continue
        recorded = record and _record(service, item, period, now, effects)
        found.append(OverdueClaim(item.ticket.key, period, period.overdue_by(now), recorded))
    return found


def _record(
    service: TicketService, item: _Watched, period: Silence, now: datetime, effects: EffectsFor | None
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
