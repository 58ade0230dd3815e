"""What handlers need from the world, as Protocols; `app/` implements them, tests fake them.

A handler reads what it needs (GitHub, the repository's rules, a read of the store), then
makes its change in one unit of work that it shows:

    async with services.store.unit() as uow:
        outcome = await uow.execute(key, command, context)
        await uow.send(Reaction(...))
        await uow.commit()

Nothing is written unless `commit` is reached. A handler that must let another writer see what it
wrote before it reads (a held check before looking up the PRs it concerns) shows two units, in order.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from handlers.agent_ports import AgentReads, AgentWrites
from handlers.answers import Answer
from handlers.gate_ports import GateReads, GateWrites
from handlers.kept_answers import KeptAnswer as KeptAnswer
from policies.budgets import Budget
from policies.commands import CommandName
from policies.deployment_facts import MergedTicket as MergedTicket
from policies.door import Change, ChangeContext
from policies.events import Event
from policies.links import links_move_rail, same_repository
from policies.model import Ticket, TicketKey
from policies.rails import Observation, PullRequestObserved, RailPolicy
from policies.refusals import Refusal
from policies.states import Role, SelfVerification
from policies.watchdog import Clocks

Clock = Callable[[], float]
"""Epoch seconds now."""

# -- what the store answers -------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What an operation did: the events it appended, or the refusal it got."""

    operation_id: str
    ticket: TicketKey
    revision: int
    events: tuple[Event, ...] = ()
    refusal: Refusal | None = None
    replayed: bool = False
    shown: Ticket | None = field(default=None, compare=False)  # the state to show, when it changed
    elsewhere: bool = False  # a replay of the operation id as another ticket's (an API key reused)

    @property
    def applied(self) -> bool:
        """Whether the operation changed the ticket."""
        return self.refusal is None and bool(self.events)

    @property
    def label(self) -> str:
        """What `/metrics` counts it as: `applied`, `unchanged` (nothing to change), or the refusal's code."""
        if self.refusal is not None:
            return self.refusal.code.value
        return "applied" if self.applied else "unchanged"

    @property
    def answerable(self) -> bool:
        """Whether this outcome gets answers: not a replay (already answered), not a transient refusal."""
        return not self.replayed and not (self.refusal is not None and self.refusal.transient)


@dataclass(frozen=True)
class RecordedEvent:
    """An event as stored, with the revision it gave the ticket."""

    revision: int
    event: Event


@dataclass(frozen=True)
class PullRequest:
    """The facts of one PR that the repository rail needs."""

    repository: str
    number: int
    url: str
    open: bool
    merged: bool
    head_ref: str | None
    head_sha: str | None
    merge_commit: str | None
    updated_at: datetime
    author: str | None = None
    head_repository: str | None = None
    merged_at: datetime | None = None
    # Whether the author held a role when the PR was opened or edited (resolved then, kept
    # with the PR): None when not asked (a PR of this repository needs no answer).
    author_has_role: bool | None = None
    base_ref: str | None = None  # the branch it targets (None: stored before bases were kept)
    repository_id: int | None = None  # GitHub's `base.repo.id` (None: stored before 0025)
    head_repository_id: int | None = None  # `head.repo.id` (None: a deleted fork's, or not known)

    @property
    def head_in_repository(self) -> bool:
        """Whether the head branch is in the PR's own repository, not a fork (by id: `same_repository`)."""
        ids = (self.head_repository_id, self.repository_id)
        return same_repository(*ids, head_repository=self.head_repository, repository=self.repository)

    @property
    def links_count(self) -> bool:
        """Whether its links move the tickets' repository rail, or only mention them (`links_move_rail`)."""
        return links_move_rail(
            head_in_repository=self.head_in_repository,
            author_has_role=bool(self.author_has_role),
            merged=self.merged,
        )

    def observed(
        self, linked: bool, *, linked_at_merge: bool = False, mention: bool = False
    ) -> PullRequestObserved:
        """This PR as an observation about one ticket it links (or no longer links).

        `linked_at_merge`: the caller knows the PR linked the ticket when it merged;
        `mention`: the PR names the ticket but its links do not count (`links_move_rail`)."""
        return PullRequestObserved(
            number=self.number,
            url=self.url,
            linked=linked,
            open=self.open,
            merged=self.merged,
            head_sha=self.head_sha,
            head_ref=self.head_ref,
            merge_commit=self.merge_commit if self.merged else None,
            updated_at=self.updated_at,
            linked_at_merge=linked_at_merge and self.merged,
            mention=mention and not linked,
            base_ref=self.base_ref,
        )


@dataclass(frozen=True)
class Heard:
    """One sign of life (or an attempt opening) for the claim watchdog."""

    key: TicketKey
    attempt: int
    at: datetime
    kind: str
    source: str
    max_silence_minutes: int | None = None
    policy_version: str | None = None
    max_attempt_hours: int | None = None  # the attempt's deadline, read with its silence (None: none)
    max_review_wait_hours: int | None = None  # None: a delivery's wait is not watched


PullAndTickets = tuple[PullRequest, set[int]]
"""A stored PR and the ticket numbers it links."""


class Reads(AgentReads, GateReads, Protocol):
    """What a read of the store answers (a unit of work answers it too, inside its transaction)."""

    async def ticket(self, key: TicketKey) -> Ticket | None:
        """The ticket at its latest revision, or None when the issue is not a ticket."""

    async def history(self, key: TicketKey) -> list[RecordedEvent]:
        """The ticket's event log, oldest first."""

    async def delivery_cost_since(self, repository: str, actor_id: int, since: datetime) -> str:
        """The cost the account's deliveries in `repository` reported since `since` (USD)."""

    async def commands_since(self, repository: str, actor_id: int, since: datetime) -> int:
        """How many commands the account ran in the repository since `since`."""

    async def stored_pull(self, repository: str, number: int) -> PullAndTickets | None:
        """A PR as last seen, with its links; None when railyard has not seen it."""

    async def pulls_where(
        self, repository: str, *, head_sha: str | None = None, head_ref: str | None = None
    ) -> list[PullAndTickets]:
        """Stored PRs with this head commit or head branch (a branch of `repository`, never a fork's)."""

    async def open_linked_into(self, repository: str, branch: str) -> list[PullAndTickets]:
        """Stored open PRs that link tickets and target `branch` (or an unknown base), newest first."""

    async def tickets_on_branch(
        self,
        repository: str,
        branch: str,
        *,
        head_in_repository: bool,
        reported_by: datetime | None = None,
    ) -> set[int]:
        """Tickets whose claim or delivery reported `branch` (by `reported_by`); none for a fork's head."""

    async def tickets_showing_pull(self, repository: str, number: int, before: datetime) -> set[int]:
        """Tickets whose rails show PR `number` linked and open as of a time before `before`."""

    async def pulls_merged_as(self, repository: str, commits: Collection[str] | None) -> list[PullAndTickets]:
        """Stored merged PRs whose merge commit is one of `commits` (None: all), with their links."""

    async def attempt_opened_by(self, repository: str, number: int, when: datetime) -> bool:
        """Whether the ticket had an attempt opened by `when`."""

    async def held_for(self, repository: str, subject: str) -> list[Observation]:
        """Observations held under a subject, oldest first."""

    async def merged_tickets(self, repository: str) -> list[MergedTicket]:
        """Every merged ticket, with the newest deployed commit known to contain its merge."""

    async def kept_answer(self, account_id: int, key: str) -> KeptAnswer | None:
        """The API answer kept under the account's Idempotency-Key, if any."""

    async def repository_at(self, repository_id: int) -> str | None:
        """The name the records of GitHub's repository `repository_id` are kept under, if known."""

    async def repository_named(self, name: str) -> int | None:
        """The id of the repository whose records are kept under `name`, if any."""


class UnitOfWork(Reads, AgentWrites, GateWrites, Protocol):
    """One transaction: every write a handler makes for one delivery, committed together."""

    async def execute(
        self,
        key: TicketKey,
        change: Change,
        context: ChangeContext,
        *,
        installation_id: int | None = None,
        expected_revision: int | None = None,
    ) -> Outcome:
        """The one door: apply a command, an observation or a notice, at most once per operation id.

        The surfaces that show a changed ticket are enqueued with the change."""

    async def remember(self, pull: PullRequest, linked: set[int]) -> set[int]:
        """Store the PR (unless a newer state is stored); return the tickets it linked before."""

    async def hold(
        self,
        repository: str,
        subject: str,
        observation: Observation,
        now: float,
        *,
        per_subject: bool = False,
    ) -> None:
        """Keep an observation under a subject until it expires (once; once per subject if asked)."""

    async def record_sign_of_life(self, heard: Heard) -> bool:
        """Store a sign of life unless a later one is stored; False when the issue is not a ticket."""

    async def place_repository(
        self, repository_id: int, name: str, created_at: float | None, now: float, installation_id: int | None
    ) -> None:
        """Make `name` the name of the repository's records, written through `installation_id` if given."""

    async def place_repositories(self, names: Mapping[int, str], now: float) -> None:
        """GitHub's names now for several ids, placed together: none retires another's records."""

    async def set_installation(self, installation_id: int, account: str, status: str, now: float) -> None:
        """Record an installation's status."""

    async def set_repositories(
        self, installation_id: int, repositories: Iterable[str], active: bool, now: float
    ) -> None:
        """Record repositories added to (or removed from) an installation."""

    async def send(self, *answers: Answer) -> None:
        """Enqueue GitHub writes with this transaction; replies within the author's reply limit."""

    async def keep_answer(self, answer: KeptAnswer) -> KeptAnswer:
        """Keep an API answer with this transaction, unless one is kept under its key; the one kept."""

    async def clocks(self, key: TicketKey, ticket: Ticket) -> Clocks:
        """The ticket's watchdog clocks as of this transaction (its writes included)."""

    async def commit(self) -> None:
        """Make every write of the unit durable; without it, nothing is kept."""


class Store(Protocol):
    """The record: reads and units of work."""

    def read(self) -> AbstractAsyncContextManager[Reads]:
        """A read-only transaction."""

    def unit(self) -> AbstractAsyncContextManager[UnitOfWork]:
        """A write transaction, kept only by `commit`."""

    async def repository_at(self, repository_id: int) -> str | None:
        """`Reads.repository_at` alone, one statement: every delivery's check (`identified`)."""


# -- GitHub -----------------------------------------------------------------------------

Json = Mapping[str, Any]


class GitHubReads(Protocol):
    """What handlers read from GitHub when they run. `Missing` when GitHub says there is no such thing."""

    async def pull(self, installation_id: int, repository: str, number: int) -> Json:
        """A pull request, as `GET /repos/{repo}/pulls/{number}` answers."""

    async def issue(self, installation_id: int, repository: str, number: int) -> Json:
        """An issue, as `GET /repos/{repo}/issues/{number}` answers."""

    async def commit(self, installation_id: int, repository: str, ref: str) -> Json:
        """A commit by sha or ref (`Missing` also for GitHub's 422 "No commit found")."""

    async def branch(self, installation_id: int, repository: str, branch: str) -> Json:
        """A branch with its head commit."""

    async def login_of(self, installation_id: int, account_id: int) -> str:
        """The account's login now (`GET /user/{id}`); `Missing` when GitHub has no such account."""

    async def repository_name(self, installation_id: int, repository_id: int) -> str:
        """The repository's name now (`GET /repositories/{id}`); `Missing` when it is gone."""

    async def installation_of(self, repository: str) -> int:
        """The id of the app's installation on the repository."""

    async def closing_issues(self, installation_id: int, repository: str, number: int) -> set[int]:
        """Issues of `repository` the PR will close, the Development sidebar's links included (GraphQL)."""

    async def deployments(
        self, installation_id: int, repository: str, environment: str, limit: int
    ) -> list[Json]:
        """The newest deployments to an environment, newest first."""

    async def latest_status(self, installation_id: int, repository: str, deployment_id: int) -> Json | None:
        """A deployment's newest status, or None when it has none."""

    async def check_runs(self, installation_id: int, repository: str, sha: str) -> list[Json]:
        """Every check run on a commit, every app's (`GET .../commits/{sha}/check-runs`, all pages)."""

    async def compare_commits(self, installation_id: int, repository: str, base: str, head: str) -> list[str]:
        """The shas `head` has and `base` has not (compare, all pages); `Missing`: a commit unknown."""

    async def merged_pulls_of_commit(self, installation_id: int, repository: str, sha: str) -> list[int]:
        """The merged PRs GitHub says brought commit `sha` (`GET .../commits/{sha}/pulls`)."""

    async def check_suites(self, installation_id: int, repository: str, sha: str) -> list[Json]:
        """Every check suite on a commit (`GET .../commits/{sha}/check-suites`, all pages): a
        workflow held for a maintainer's approval shows only there, as a suite without runs."""


class Ancestry(Protocol):
    """Whether a deployed commit contains a merge commit (the compare API, cached)."""

    async def contains(self, installation_id: int, repository: str, merge_commit: str, deployed: str) -> bool:
        """True when `deployed` is `merge_commit` or a descendant of it."""

    async def contains_ticket(
        self, installation_id: int, repository: str, ticket: MergedTicket, deployed: str
    ) -> bool:
        """Whether `deployed` contains the ticket's merge (through its anchor when it can)."""


# -- the repository's rules -------------------------------------------------------------


@dataclass(frozen=True)
class RoleEntry:
    """One entry of a role list: a team (`org`, `slug`) or a login."""

    login: str | None = None
    org: str | None = None
    slug: str | None = None

    @property
    def is_team(self) -> bool:
        """Whether the entry names a team (membership is checked when a command executes)."""
        return self.slug is not None


@dataclass(frozen=True)
class Rules:
    """The part of `.github/railyard.yml` in force that handlers decide with."""

    policy_version: str
    error: str | None = None  # the file is broken: defaults are in force and this is shown
    ticket_label: str | None = None
    no_code_label: str = "no-code"
    branch_pattern: str | None = None
    environments: tuple[str, ...] = ("production",)
    gate: tuple[str, ...] = ()  # environments railyard protects (the deployment gate)
    unticketed: str = "allow"  # allow | reject: merges in a gated range that belong to no ticket
    required_checks: tuple[str, ...] = ()
    max_silence_minutes: int = 240
    max_attempt_hours: int | None = None  # None: an attempt has no absolute deadline
    max_review_wait_hours: int | None = 72  # None: a delivery's wait for review is not watched
    high_risk_labels: tuple[str, ...] = ()
    self_verification: SelfVerification = SelfVerification.EXPLICIT
    commands_per_hour: int = 30
    outsider_requests_per_hour: int = 30  # API requests by an account without a role here
    attempts_per_ticket: int = 10
    cost_per_ticket: str | None = None  # USD, an exact decimal string
    cost_per_runner_month: str | None = None  # USD per runner per calendar month (UTC)
    roles: Mapping[Role, tuple[RoleEntry, ...]] = field(default_factory=dict)
    acceptance_expires_after_days: int | None = 30  # None: an acceptance never expires
    acceptance_ci: str = "record"  # record | require (`/accept` needs the commit's CI passed)
    acceptance_by: str = "people"  # people (no Bot, no listed agent accepts) | anyone
    agents: tuple[RoleEntry, ...] = ()  # accounts that are agents although they are user accounts

    @property
    def rail_policy(self) -> RailPolicy:
        """What the repository and deployment rails are decided under."""
        return RailPolicy(environments=self.environments, required_checks=self.required_checks)

    def names_login(self, login: str) -> bool:
        """Whether a role names `login` itself (how another bot is allowed to act)."""
        folded = login.casefold()
        return any(
            e.login is not None and e.login.casefold() == folded for es in self.roles.values() for e in es
        )


class Configs(Protocol):
    """The repository's rules, read from its default branch."""

    async def load(self, installation_id: int, repository: str, *, fresh: bool = False) -> Rules:
        """The rules in force; read from GitHub now when `fresh` (commands), else recently read."""

    def forget(self, repository: str) -> None:
        """The file may have changed (a push to the default branch): read it again next time."""


class Roles(Protocol):
    """Who holds which role, asked of GitHub when a command executes."""

    async def roles(
        self,
        installation_id: int,
        repository: str,
        login: str,
        rules: Rules,
        among: Iterable[Role],
        *,
        first_only: bool = False,
        outsider: bool = False,
    ) -> frozenset[Role]:
        """The roles `login` holds now (of `among`); `CannotVerify` when GitHub will not say.

        `first_only`: only the first of `among`, in its order, that `login` holds (no more is asked
        once found). `outsider`: found role-less here within ten minutes (`Admission.outsider`):
        taken to be in none of the role lists' teams, not asked (`RoleResolver` `stranger`).
        """

    async def listed(
        self, installation_id: int, repository: str, login: str, entries: tuple[RoleEntry, ...]
    ) -> bool:
        """Whether `entries` name `login` (case-insensitively) or a team it is an `active` member
        of now (asked of GitHub as role checks are); `CannotVerify` when GitHub will not say."""


class Budgets(Protocol):
    """Per-account budgets shared by every process (`policies.budgets.Budget`)."""

    async def spend(self, account_id: int, budget: Budget) -> int | None:
        """Take one unit now: None when taken, else the seconds until the window ends (nothing taken)."""

    async def refund(self, account_id: int, budget: Budget) -> None:
        """Give back one unit taken in the current window."""

    async def spent(self, account_id: int, budget: Budget) -> int:
        """How much of the budget the account has used in the current window."""

    async def spend_and_count(
        self, account_id: int, spending: Budget, counted: Budget
    ) -> tuple[int | None, int]:
        """`spend(spending)` and `spent(counted)` at once (one transaction)."""


class CommandCounts(Protocol):
    """Where commands that reached the one door are counted (`app.runtime.metrics.Metrics`)."""

    def count_command(self, command: CommandName, outcome: Outcome) -> None:
        """One more `command` with this outcome (applied, unchanged, or its refusal code)."""


@dataclass(frozen=True)
class Services:
    """Everything a handler may use; passed in, never imported as a global. Every member is required."""

    store: Store
    github: GitHubReads
    configs: Configs
    roles: Roles
    ancestry: Ancestry
    app_id: int
    clock: Clock
    budgets: Budgets
    counts: CommandCounts
