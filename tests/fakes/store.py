"""`handlers.ports.Store` in memory: reads, and units of work kept only by `commit()`.

A unit works on a copy of the records taken when it opens; `commit()` makes the copy the
store's records, and a unit left without it (or by an exception) leaves nothing behind,
as `app.store.unit.SqlStore` rolls its transaction back. Units run one at a time, as
SQLite's `BEGIN IMMEDIATE` makes writers queue; a unit opened inside another unit of the
same task would wait for itself forever, so it fails at once instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Collection, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import datetime

from handlers.answers import Answer, DeploymentReview
from handlers.gate_ports import GateAnswer
from handlers.ports import (
    Change,
    ChangeContext,
    Heard,
    KeptAnswer,
    MergedTicket,
    Outcome,
    PullAndTickets,
    PullRequest,
    RecordedEvent,
)
from policies.events import EventType
from policies.evidence import total_cost
from policies.model import Ticket, TicketKey
from policies.rails import Observation
from policies.watchdog import Clocks
from tests.fakes.door import normalize
from tests.fakes.records import Records, SignOfLife, place, place_all, repository_named


class MemoryReads:
    """`handlers.ports.Reads` over one set of records (a read sees the records as it opened)."""

    def __init__(self, records: Records) -> None:
        self.records = records

    async def ticket(self, key: TicketKey) -> Ticket | None:
        """The ticket at its latest revision, or None."""
        return self.records.ticket(key)

    async def history(self, key: TicketKey) -> list[RecordedEvent]:
        """The ticket's event log, oldest first."""
        return self.records.history(key)

    async def commands_since(self, repository: str, actor_id: int, since: datetime) -> int:
        """Commands the account ran in the repository since `since`."""
        return self.records.commands_since(repository, actor_id, since)

    async def delivery_cost_since(self, repository: str, actor_id: int, since: datetime) -> str:
        """`tickets.delivery_cost_since`: what the account's deliveries in the repository (its
        tickets under the name now: a rename moves them) reported since `since`, in USD."""
        costs = (
            (recorded.event.data.get("evidence") or {}).get("cost_usd")
            for key, log in self.records.log.items()
            if key.repository.casefold() == repository.casefold()
            for recorded in log
            if recorded.event.type is EventType.DELIVERED
            and recorded.event.actor_id == actor_id
            and recorded.event.at >= since
        )
        return format(total_cost(costs), "f")

    async def stored_pull(self, repository: str, number: int) -> PullAndTickets | None:
        """A PR as last seen, with its links."""
        return self.records.stored_pull(repository, number)

    async def pulls_where(
        self, repository: str, *, head_sha: str | None = None, head_ref: str | None = None
    ) -> list[PullAndTickets]:
        """Stored PRs with this head commit or head branch."""
        return self.records.pulls_where(repository, head_sha, head_ref)

    async def open_linked_into(self, repository: str, branch: str) -> list[PullAndTickets]:
        """Stored open PRs that link tickets and target `branch`, newest first."""
        return self.records.open_linked_into(repository, branch)

    async def tickets_on_branch(
        self,
        repository: str,
        branch: str,
        *,
        head_in_repository: bool,
        reported_by: datetime | None = None,
    ) -> set[int]:
        """Tickets whose claim or delivery reported `branch`."""
        return self.records.tickets_on_branch(repository, branch, head_in_repository, reported_by)

    async def pulls_merged_as(self, repository: str, commits: Collection[str] | None) -> list[PullAndTickets]:
        """Stored merged PRs with one of these merge commits (None: every one)."""
        wanted = None if commits is None else set(commits)
        return [
            (pull, set(linked))
            for (repo, _), (pull, linked) in self.records.pulls.items()
            if repo == repository.casefold()
            and pull.merged
            and (wanted is None or pull.merge_commit in wanted)
        ]

    async def gate_backlog(
        self, repository: str, answer: str, rid: int | None, kept: tuple[int, str, str, str] | None = None
    ) -> tuple[bool, int | None]:
        """`gate_reads.gate_backlog`: the answer sent already (by key, or kept by id); the fewest
        runs of a pending close."""
        sent = any(isinstance(item, DeploymentReview) and item.key == answer for item in self.records.answers)
        sent = sent or any(
            (a.repository_id, a.environment, a.sha, a.request) == kept for a in self.records.gate_approvals
        )
        name = repository.casefold()

        def ours(at: str, kept: int | None) -> bool:  # as `merge_runs`: by id, else by name
            return kept == rid if rid is not None and kept is not None else at == name

        runs = [n for (at, kept, n) in self.records.pending_closes.values() if ours(at, kept)]
        return sent, min(runs) if runs else None

    async def attempt_opened_by(self, repository: str, number: int, when: datetime) -> bool:
        """Whether the ticket had an attempt opened by `when`."""
        return self.records.attempt_opened_by(repository, number, when)

    async def held_for(self, repository: str, subject: str) -> list[Observation]:
        """Observations held under a subject, oldest first."""
        return self.records.held_for(repository, subject)

    async def merged_tickets(self, repository: str) -> list[MergedTicket]:
        """Every merged ticket with its anchor."""
        return self.records.merged_tickets(repository)

    async def tickets_showing_pull(self, repository: str, number: int, before: datetime) -> set[int]:
        """Tickets whose rails show the PR linked and open as of before `before`."""
        return self.records.tickets_showing_pull(repository, number, before)

    async def repository_at(self, repository_id: int) -> str | None:
        """`repositories.repository_at`."""
        return self.records.names.get(repository_id)

    async def repository_named(self, name: str) -> int | None:
        """`repositories.repository_named`."""
        return repository_named(self.records, name)

    async def kept_answer(self, account_id: int, key: str) -> KeptAnswer | None:
        """The API answer kept under the account's key."""
        return self.records.api_answers.get((account_id, key))

    async def agent_logins(self, installation_id: int, account_id: int) -> set[str]:
        """`agent_accounts.logins_of`: the listed logins the account acted under."""
        return {login for (i, a, login) in self.records.agents if (i, a) == (installation_id, account_id)}

    async def gate_approved(
        self, repository_id: int, environment: str, shas: Collection[str]
    ) -> set[str] | None:
        """`gate_approvals.approved`: of `shas`, those approved there; None while no answer there
        was an approval or started its range from a commit (the bootstrap lasts)."""
        there = [
            answer
            for answer in self.records.gate_approvals
            if (answer.repository_id, answer.environment) == (repository_id, environment.casefold())
        ]
        if not any(answer.approved or answer.base is not None for answer in there):
            return None
        wanted = {sha.lower() for sha in shas}
        return {answer.sha for answer in there if answer.approved and answer.sha in wanted}

    async def gate_bases(self, repository_id: int, environment: str) -> set[str]:
        """`gate_approvals.bases`: the commits the answers' ranges there started from."""
        return {
            answer.base.lower()
            for answer in self.records.gate_approvals
            if (answer.repository_id, answer.environment) == (repository_id, environment.casefold())
            and answer.base is not None
        }


class MemoryUnit(MemoryReads):
    """`handlers.ports.UnitOfWork` on a private copy of the store's records."""

    def __init__(self, store: MemoryStore) -> None:
        super().__init__(store.records.copy())
        self._store = store
        self.ended = False

    def _writing(self) -> Records:
        if self.ended:
            raise RuntimeError("this unit of work has already ended")
        return self.records

    async def execute(
        self,
        key: TicketKey,
        change: Change,
        context: ChangeContext,
        *,
        installation_id: int | None = None,
        expected_revision: int | None = None,
    ) -> Outcome:
        """The one door: decided by the core, at most once per operation id."""
        records = self._writing()
        outcome = records.execute(key, change, context, expected_revision)
        if outcome.shown is not None:
            records.show(outcome.shown, installation_id)
        return outcome

    async def remember(self, pull: PullRequest, linked: set[int]) -> set[int]:
        """Store the PR unless a newer state is stored; return what it linked before."""
        return self._writing().remember(pull, linked)

    async def hold(
        self,
        repository: str,
        subject: str,
        observation: Observation,
        now: float,
        *,
        per_subject: bool = False,
    ) -> None:
        """Keep an observation under a subject (once)."""
        self._writing().hold(repository, subject, observation, now, per_subject)

    async def record_sign_of_life(self, heard: Heard) -> bool:
        """Store a sign of life unless a later one is stored."""
        return self._writing().record_sign_of_life(heard)

    async def place_repository(
        self, repository_id: int, name: str, created_at: float | None, now: float, installation_id: int | None
    ) -> None:
        """`repositories.place`."""
        place(self._writing(), repository_id, name, installation_id)

    async def place_repositories(self, names: Mapping[int, str], now: float) -> None:
        """`repositories.place_all`."""
        place_all(self._writing(), names)

    async def set_installation(self, installation_id: int, account: str, status: str, now: float) -> None:
        """Record an installation's status."""
        self._writing().installations[installation_id] = (account, status, now)

    async def set_repositories(
        self, installation_id: int, repositories: Iterable[str], active: bool, now: float
    ) -> None:
        """Record repositories added to or removed from an installation."""
        records = self._writing()
        for repository in repositories:
            records.repositories[(installation_id, repository.casefold())] = (active, now)

    async def remember_agent(self, installation_id: int, login: str, account_id: int, now: float) -> None:
        """`agent_accounts.remember`: kept once, the first time."""
        self._writing().agents.setdefault((installation_id, account_id, login.casefold()), now)

    async def record_gate_answer(self, answer: GateAnswer) -> None:
        """`gate_approvals.record`: once per request (its primary key), the first answer kept."""
        records = self._writing()
        base = answer.base.lower() if answer.base else None  # as `record`: an empty base is none
        kept = replace(answer, environment=answer.environment.casefold(), sha=answer.sha.lower(), base=base)
        key = (kept.repository_id, kept.environment, kept.sha, kept.request)
        if all((a.repository_id, a.environment, a.sha, a.request) != key for a in records.gate_approvals):
            records.gate_approvals.append(kept)

    async def send(self, *answers: Answer) -> None:
        """Enqueue the answers with this unit (kept, like everything else, only by `commit`)."""
        self._writing().answers.extend(answers)

    async def keep_answer(self, answer: KeptAnswer) -> KeptAnswer:
        """Keep the API answer unless one is kept under its key; the one kept."""
        return self._writing().api_answers.setdefault((answer.account_id, answer.key), answer)

    async def clocks(self, key: TicketKey, ticket: Ticket) -> Clocks:
        """No watchdog rows are kept here: no clocks."""
        return Clocks()

    async def commit(self) -> None:
        """Make every write of the unit the store's; the unit ends here."""
        records = self._writing()
        self._store.records = records
        self._store.commits += 1
        self.ended = True


class MemoryStore:
    """`handlers.ports.Store` in memory, with the views a test asserts on."""

    def __init__(self) -> None:
        self.records = Records()
        self.commits = 0
        self._writer = asyncio.Lock()
        self._writer_task: asyncio.Task[object] | None = None

    @asynccontextmanager
    async def read(self) -> AsyncIterator[MemoryReads]:
        """A read of the records committed so far."""
        yield MemoryReads(self.records)

    async def repository_at(self, repository_id: int) -> str | None:
        """`Store.repository_at`: the committed records' name for the id."""
        return self.records.names.get(repository_id)

    @asynccontextmanager
    async def unit(self) -> AsyncIterator[MemoryUnit]:
        """A unit of work, kept only by `commit()`; units queue, one at a time."""
        task = asyncio.current_task()
        if self._writer.locked() and self._writer_task is task:
            raise RuntimeError("a unit of work opened inside another: SqlStore would wait for itself")
        async with self._writer:
            self._writer_task = task
            unit = MemoryUnit(self)
            try:
                yield unit
            finally:
                unit.ended = True  # without `commit()` its copy is simply dropped
                self._writer_task = None

    def close_waits(
        self, delivery_id: str, repository: str, runs: int = 0, repository_id: int | None = None
    ) -> None:
        """A `pull_request.closed` delivery of `repository` (GitHub's id `repository_id`, None: kept
        before ids were) stored and not processed yet, run `runs` times so far."""
        self.records.pending_closes[delivery_id] = (repository.casefold(), repository_id, runs)

    def processed(self, delivery_id: str) -> None:
        """The stored delivery processed (its status no longer pending)."""
        self.records.pending_closes.pop(delivery_id, None)

    # -- what tests look at ------------------------------------------------------------

    def ticket(self, key: TicketKey) -> Ticket | None:
        """The committed ticket, or None."""
        return self.records.ticket(key)

    def history(self, key: TicketKey) -> list[RecordedEvent]:
        """The committed event log of a ticket."""
        return self.records.history(key)

    @property
    def answers(self) -> list[Answer]:
        """Every answer committed, in order."""
        return list(self.records.answers)

    def sign_of_life(self, key: TicketKey, attempt: int) -> SignOfLife | None:
        """The latest sign of life stored for an attempt."""
        return self.records.signs.get((normalize(key), attempt))

    def installation(self, installation_id: int) -> tuple[str, str] | None:
        """(account, status) of an installation, or None when never heard of."""
        found = self.records.installations.get(installation_id)
        return (found[0], found[1]) if found else None

    def active_repositories(self, installation_id: int) -> list[str]:
        """The repositories an installation covers now, sorted."""
        return sorted(
            repository
            for (installation, repository), (active, _) in self.records.repositories.items()
            if installation == installation_id and active
        )
