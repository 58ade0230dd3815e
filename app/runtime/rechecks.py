"""The hourly re-check of acceptances: every accepted ticket whose PRs are open is judged again
(SPEC *Acceptance that stays true*: at least hourly), so an acceptance that expired or whose
reviewer lost the role turns the `railyard` check `action_required` without anyone asking,
and a check that could not verify a reviewer's role (GitHub would not say) is written again once
GitHub confirms it, without waiting for a push or Re-run.

Each ticket is judged on its own: one that fails (GitHub unreachable, a row that no longer
decodes) is logged and named in `/healthz` by row id, and the others are still judged.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import structlog

from app.contracts.effect_types import check_run
from app.runtime.supervisor import Loop
from app.store.database import Database
from app.store.effects import write_unverified_again
from app.store.signs import Rechecked, Unwatchable, accepted_with_open_pulls
from handlers.acceptance import recheck
from handlers.ports import Services
from policies.model import TicketKey

log = structlog.get_logger(__name__)


@dataclass
class AcceptanceRechecks:
    """Judges the accepted tickets with open PRs every `every` seconds (the server's loop)."""

    database: Database
    ports: Services
    every: float = 3600.0
    failed: list[dict[str, object]] = field(default_factory=list)
    ticket_failures: int = 0
    judged: int = 0
    rewritten: int = 0

    def loop(self) -> Loop:
        """The round as a supervised loop: a round that fails is logged and retried after a backoff."""
        return Loop(
            "acceptance_rechecks",
            self._step,
            interval=self.every,
            stuck_after=max(600.0, 3 * self.every),
            detail=self.detail,
        )

    def detail(self) -> dict[str, object]:
        """What `/healthz` adds: the tickets the last round could not judge (row ids only)."""
        return {
            "failed_tickets": list(self.failed),
            "ticket_failures_total": self.ticket_failures,
            "judged_total": self.judged,
            "checks_rewritten_total": self.rewritten,
        }

    async def _verified(self, installation_id: int, key: TicketKey) -> None:
        """The ticket's acceptance holds and GitHub confirmed the reviewer's role: each check on
        its open PRs' heads that said it could not verify that is written again (the others say
        what they said before; writing them again would only cost a render)."""
        async with self.ports.store.read() as reads:
            ticket = await reads.ticket(key)
        if ticket is None:
            return
        checks = [
            check_run(installation_id, key.repository, pr.number, head)
            for pr in ticket.rails.pull_requests.values()
            if pr.linked and pr.open
            for head in pr.heads
        ]
        again = await asyncio.to_thread(write_unverified_again, self.database, checks, self.ports.clock())
        if again:
            log.info("acceptance_verified_checks_again", ticket=str(key), checks=len(again))
            self.rewritten += len(again)

    def _due(self) -> list[Rechecked | Unwatchable]:
        with self.database.read() as connection:
            return accepted_with_open_pulls(connection)

    async def _step(self, stop: asyncio.Event) -> bool:
        due = await asyncio.to_thread(self._due)
        failed: list[dict[str, object]] = []
        for item in due:
            if stop.is_set():
                break
            if isinstance(item, Unwatchable):  # its row no longer reads: named, the others judged
                log.warning("acceptance_recheck_failed", ticket_id=item.ticket_id, error=repr(item.error))
                failed.append({"ticket_id": item.ticket_id, "error": type(item.error).__name__})
                continue
            if item.installation_id is None:
                continue  # no installation has named it since it was stored: nothing to ask GitHub with
            try:
                validity = await recheck(self.ports, item.installation_id, item.ticket)
                self.judged += 1
                if validity is not None and validity.valid and not validity.unverified:
                    await self._verified(item.installation_id, item.ticket)
            except Exception as error:  # one ticket's failure: named, and the others still judged
                log.warning("acceptance_recheck_failed", ticket_id=item.ticket_id, error=repr(error))
                failed.append({"ticket_id": item.ticket_id, "error": type(error).__name__})
        self.failed = failed
        self.ticket_failures += len(failed)
        return False
