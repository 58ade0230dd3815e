"""Housekeeping that runs beside the server: retention (payloads, delivery ids, replies, the
API's answers and budget windows), the HTTP cache's bounds, and recovery of lost deliveries.

GitHub never redelivers on its own. Deliveries that failed while railyard was down or
unreachable are listed by `GET /app/hook/deliveries`; those not stored here are asked for
again with `POST /app/hook/deliveries/{id}/attempts`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

import structlog

from app.github.client import GitHubClient, GitHubError
from app.runtime.supervisor import Loop
from app.store.budgets import prune_budgets
from app.store.database import Database
from app.store.http_cache import prune_http_cache
from app.store.replies import prune_replies
from app.store.retention import (
    Retention,
    apply_retention,
    prune_api_answers,
    prune_held_observations,
    stored_delivery_ids,
)
from app.store.token_cache import prune_installation_tokens
from app.store.web_sessions import prune_web_sessions
from handlers.errors import TransientError

log = structlog.get_logger(__name__)


def _when(text: object) -> float:
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


MAX_UNASKED = 10_000
"""Failed deliveries kept to ask for in a later round at most (the oldest go first past it)."""
OVERLAP_SECONDS = 300.0
"""How far back past where the last pass began a pass reads again (GitHub may list a delivery a
little after its time)."""


@dataclass
class RecoveryPass:
    """Where recovery's reading of GitHub's list (newest first) stands between rounds.

    A pass reads from the newest delivery back to where the last finished pass began (less
    `OVERLAP_SECONDS`), or to the lookback's start; a round reads at most `max_pages` of it and the
    next round goes on from the page it stopped at, so a busy installation's older failures are
    reached in later rounds instead of never."""

    covered_from: float = 0.0  # where the last finished pass began: every older delivery was read
    resume: dict[str, str] | None = None  # the next (older) page of the pass under way
    began: float = 0.0  # the newest delivery of the pass under way
    # Failed deliveries found and not yet asked for (guid -> when GitHub sent it, its hook
    # delivery id): a round that ends early (GitHub away, a rate limit) leaves them to the next.
    unasked: dict[str, tuple[float, int]] = field(default_factory=dict)


async def recover_missed_deliveries(
    database: Database,
    github: GitHubClient,
    now: float,
    lookback_hours: float = 72.0,
    max_pages: int = 20,
    reading: RecoveryPass | None = None,
) -> list[str]:
    """Ask GitHub to redeliver failed deliveries that never reached the database; return their guids.

    `reading`: where the last round stopped (kept by `Maintenance`); None reads one pass from
    the newest delivery, at most `max_pages`."""
    reading = reading or RecoveryPass()
    cutoff = now - lookback_hours * 3600
    stop_at = max(cutoff, reading.covered_from - OVERLAP_SECONDS)
    arrived: set[str] = set()
    failed: dict[str, tuple[float, int]] = {}
    params: dict[str, str] | None = reading.resume or {"per_page": "100"}
    began, finished = (reading.began if reading.resume else 0.0), False
    for _ in range(max_pages):
        page, params = await github.call_page("list_hook_deliveries", None, params=params)
        if not isinstance(page, list) or not page:
            finished = True
            break
        for item in page:
            if not isinstance(item, dict):  # one odd item never stops the others being read
                continue
            guid, status_code = str(item.get("guid", "")), item.get("status_code")
            if isinstance(status_code, int) and 200 <= status_code < 300:
                arrived.add(guid)
            elif guid and isinstance(item.get("id"), int):
                failed.setdefault(guid, (_when(item.get("delivered_at")), item["id"]))
        times = [_when(item.get("delivered_at")) for item in page if isinstance(item, dict)]
        began = max([began, *times])
        if params is None or min(times, default=0.0) < stop_at:
            finished = True
            break
    if finished:
        reading.covered_from, reading.resume, reading.began = began or reading.covered_from, None, 0.0
    else:
        reading.resume, reading.began = params, began
    unasked = reading.unasked
    for guid, found in failed.items():
        if guid not in arrived:
            unasked.setdefault(guid, found)
    for guid in [g for g, (at, _) in unasked.items() if g in arrived or at < cutoff]:
        del unasked[guid]  # arrived since, or too old for GitHub to send again
    while len(unasked) > MAX_UNASKED:
        del unasked[min(unasked, key=lambda g: unasked[g][0])]
    stored = await asyncio.to_thread(stored_delivery_ids, database, list(unasked))
    asked = []
    # Oldest first, as GitHub first sent them: each redelivery is sent at once, and the queue
    # takes them in the order they come.
    for guid in sorted(unasked, key=lambda g: unasked[g]):
        if guid in stored:
            del unasked[guid]
            continue
        try:
            await github.call("redeliver", None, delivery_id=unasked[guid][1])
        except GitHubError as error:
            # GitHub refuses this one (too old, gone): the others are still asked for, and the
            # next round does not stop at it again and again. GitHub away (transient) ends the
            # round, and what is left is asked for in the next.
            log.warning("GitHub would not redeliver a delivery", guid=guid, error=str(error))
            del unasked[guid]
            continue
        del unasked[guid]
        asked.append(guid)
        log.info("asked GitHub to redeliver a delivery that never arrived", guid=guid)
    return asked


@dataclass
class Maintenance:
    """Runs retention and recovery periodically until stopped."""

    database: Database
    github: GitHubClient | None
    clock: Callable[[], float] = time.time
    retention: Retention = field(default_factory=Retention)
    retention_every: float = 3600.0
    recovery_every: float = 600.0
    # The HTTP cache's bounds (rows, bytes), enforced every `http_cache_every`; None: no cache.
    http_cache: tuple[int, int] | None = None
    http_cache_every: float = 300.0

    stuck_after: float = 900.0  # recovery reads up to 20 pages of deliveries, each may take 15 s

    def __post_init__(self) -> None:
        self._next_retention = self._next_recovery = self._next_prune = 0.0
        self._reading = RecoveryPass()  # where recovery's reading of GitHub's list stands

    def loop(self) -> Loop:
        """Housekeeping as a supervised loop: a round that fails is logged and retried after a backoff."""
        interval = min(self.retention_every, self.recovery_every, 60.0)
        return Loop("housekeeping", self._step, interval=interval, stuck_after=self.stuck_after)

    async def run(self, stop: asyncio.Event) -> None:
        """Loop until `stop`; a failed round is logged and tried again."""
        await self.loop().run(stop)

    async def _step(self, stop: asyncio.Event) -> bool:
        """One round: retention and recovery when each is due (a task not done stays due)."""
        now = time.monotonic()
        if now >= self._next_retention:
            dropped, forgotten = await asyncio.to_thread(
                apply_retention, self.database, self.clock(), self.retention
            )
            if dropped or forgotten:
                log.info("retention", payloads_dropped=dropped, delivery_ids_dropped=forgotten)
            expired = await asyncio.to_thread(
                prune_held_observations, self.database, self.clock(), self.retention.held_observation_days
            )
            await asyncio.to_thread(prune_replies, self.database, self.clock())
            answers = await asyncio.to_thread(
                prune_api_answers, self.database, self.clock(), self.retention.api_answer_hours
            )
            budgets = await asyncio.to_thread(prune_budgets, self.database, self.clock())
            if answers or budgets:
                log.info("retention", api_answers_dropped=answers, api_budget_windows_dropped=budgets)
            await asyncio.to_thread(prune_web_sessions, self.database, self.clock())
            await asyncio.to_thread(prune_installation_tokens, self.database, self.clock())
            self._next_retention = now + self.retention_every
            if expired:
                log.info("retention", held_observations_expired=expired)
        if self.http_cache is not None and now >= self._next_prune:
            evicted = await asyncio.to_thread(prune_http_cache, self.database, *self.http_cache)
            self._next_prune = now + self.http_cache_every
            if evicted:
                log.info("retention", http_cache_evicted=evicted)
        if self.github is not None and now >= self._next_recovery:
            try:
                reading = self._reading
                await recover_missed_deliveries(self.database, self.github, self.clock(), reading=reading)
            except (TransientError, GitHubError) as error:
                # GitHub away is not housekeeping failing: it is asked again next time.
                log.warning("could not check GitHub for missed deliveries", error=str(error))
            self._next_recovery = now + self.recovery_every
        return False
