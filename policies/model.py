"""The ticket aggregate and the values it holds.

A ticket is rebuilt by folding its events (`policies.fold.apply`); nothing here
performs I/O or reads a clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from policies.rails import Rails
from policies.states import ReviewKind, Role, WorkState


def ascii_digits(text: str) -> bool:
    """Whether `text` is one or more of 0-9 (`str.isdigit()` also holds for `²`, which `int()`
    refuses)."""
    return text.isascii() and text.isdigit()


def same_login(left: str | None, right: str | None) -> bool:
    """GitHub logins are case-insensitive: `Octocat` and `octocat` are one spelling."""
    return left is not None and right is not None and left.casefold() == right.casefold()


def same_account(
    login: str | None, account_id: int | None, other_login: str | None, other_id: int | None
) -> bool:
    """Whether an actor (`login`, `account_id`) is the recorded account (`other_login`, `other_id`).

    An account is its user id: a login can be renamed, and a freed login registered by
    someone else. A record with an id matches that account only, never an actor without one.
    The login decides only for a record made before railyard stored ids, which adopts the id
    at its first matching event (see `policies.fold.apply`).
    """
    if other_id is not None:
        return account_id == other_id
    return same_login(login, other_login)


@dataclass(frozen=True)
class TicketKey:
    """A ticket is a GitHub issue: `owner/repo#number`."""

    repository: str
    number: int

    def __str__(self) -> str:
        return f"{self.repository}#{self.number}"

    @classmethod
    def parse(cls, text: str) -> TicketKey:
        """Read `OWNER/REPO#N`; raise ValueError with a readable message otherwise."""
        repository, sep, number = text.strip().rpartition("#")
        owner, slash, name = repository.partition("/")
        if not sep or not slash or not owner or not name or "/" in name or not ascii_digits(number):
            raise ValueError(f"expected OWNER/REPO#NUMBER, got {text!r}")
        if len(number) > 10 or int(number) >= 2**31:  # GitHub's issue numbers are 32-bit integers
            raise ValueError(
                f"{repository}#{number} is not a ticket (GitHub's issue numbers are below 2**31)"
            )
        return cls(repository=repository, number=int(number))


@dataclass(frozen=True)
class Actor:
    """Who runs a command, with the roles resolved at the edge when the command executes."""

    login: str
    roles: frozenset[Role] = frozenset()
    id: int | None = None  # the GitHub user id: the identity (None only in old records and some tests)

    def is_account(self, login: str | None, account_id: int | None) -> bool:
        """Whether this actor is the recorded account (by id; by login only for records without one)."""
        return same_account(self.login, self.id, login, account_id)


@dataclass(frozen=True)
class Evidence:
    """What the runner reports a delivery's run used; its word, never a verdict.

    `cost_usd` is an exact decimal string of US dollars (`"0.42"`), as recorded.
    """

    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: str | None = None


@dataclass(frozen=True)
class Delivery:
    """Work handed over by `/deliver`: one append-only delivery record."""

    attempt: int
    runner: str
    summary: str
    branch: str | None
    commit: str | None
    pull_request: int | None
    artifacts: tuple[str, ...]
    comment_id: int | None
    comment_at: datetime | None
    operation_id: str
    at: datetime
    runner_id: int | None = None
    tree: str | None = None  # the delivered commit's tree sha, when GitHub said it
    evidence: Evidence | None = None  # what the runner reports the run used

    def same_work_as(self, commit: str | None, artifacts: tuple[str, ...]) -> bool:
        """A delivery whose resolved commit and artifacts are unchanged is not progress."""
        return self.commit == commit and sorted(self.artifacts) == sorted(artifacts)


@dataclass(frozen=True)
class Review:
    """How the current acceptance was reached, and everything it was bound to.

    `decided_at` is when the decision was written (the accepting comment's `created_at`; for the
    API, when railyard recorded it), from which the expiry counts. Acceptances recorded before
    railyard bound trees, CI and descriptions have None there (CI `none`), and their expiry
    counts from the time they were recorded.
    """

    reviewer: str
    kind: ReviewKind
    attempt: int
    commit: str | None
    reason: str | None
    at: datetime
    reviewer_id: int | None = None
    role: str | None = None  # the role the decision was made in
    decided_at: datetime | None = None
    tree: str | None = None  # the accepted commit's tree sha
    ci: str = "none"  # the delivered commit's CI when accepted: passed, failed, pending, ...
    ci_checks: tuple[str, ...] = ()  # the checks that decided `ci`
    description_digest: str | None = None
    policy_version: str = ""
    revision: int = 0  # the `accepted` event's revision
    renews: int | None = None  # the revision of the acceptance this one renewed
    invalidated: str | None = None  # the recorded reason it stopped holding (`InvalidReason`)
    expires_at: datetime | None = None  # bound when accepted (None with `expiry_bound`: never)
    expiry_bound: bool = False  # False: recorded before expiries were bound; counted from `at`

    @property
    def written_at(self) -> datetime:
        """When the decision was written, from which its expiry counts."""
        return self.decided_at or self.at


@dataclass(frozen=True)
class Feedback:
    """What the next attempt should know: the latest send-back feedback or reopen reason."""

    kind: str  # "sent_back" or "reopened"
    text: str
    by: str
    by_id: int | None
    at: datetime
    attempt: int


@dataclass(frozen=True)
class Ticket:
    """The aggregate: the work rail, its relations and attempts, and the two other rails.

    `work is None` means the issue is not (yet) a ticket.
    """

    key: TicketKey
    revision: int = 0
    work: WorkState | None = None
    no_code: bool = False
    owner: str | None = None  # the current login of the owner's account (shown; never compared alone)
    claimant: str | None = None
    owner_id: int | None = None  # None only for tickets recorded before ids were stored
    claimant_id: int | None = None
    attempt: int = 0
    check_in_minutes: int | None = None
    attempt_branch: str | None = None
    last_delivery: Delivery | None = None
    deliveries: int = 0
    # (attempt, commit, artifacts) of every delivery, oldest first: no delivery may repeat one
    delivered_work: tuple[tuple[int, str | None, tuple[str, ...]], ...] = ()
    cost_usd: str = "0"  # the sum of every delivery's reported cost
    input_tokens: int = 0  # the sums of every delivery's reported tokens
    output_tokens: int = 0
    over_budget: bool = False  # its reported cost passed `limits.cost_per_ticket` (recorded once)
    review: Review | None = None
    feedback: Feedback | None = None
    description_digest: str | None = None  # of the title and body, as last recorded
    description_changed: str | None = None  # "claim" or "acceptance": edited since that, unseen
    description_edited_at: datetime | None = None  # the latest recorded edit's time, as GitHub said it
    sent_back: bool = False  # the current attempt was opened by `/send-back`
    # The attempt at which someone other than the claimant last reopened the work: the loop
    # limit (`limits.attempts_per_ticket`) counts attempts from it (None: never reopened so).
    reopened_at_attempt: int | None = None
    closed: bool = False  # the issue is closed on GitHub: shown, not watched; WorkState is untouched
    reverts: tuple[tuple[int, int], ...] = ()  # (merged PR, the merged PR that reverted it), sorted
    # The watch periods recorded overdue lately (`policies.notices.period_of`): each is recorded
    # once, whatever operation id it is noticed under (a rename changes the name ids spell).
    noticed: tuple[str, ...] = ()
    rails: Rails = field(default_factory=Rails)

    @property
    def exists(self) -> bool:
        """Whether the issue has become a ticket."""
        return self.work is not None

    @property
    def current_delivery(self) -> Delivery | None:
        """The delivery awaiting review, or accepted; None while no delivery is current."""
        if self.work in (WorkState.DELIVERED, WorkState.ACCEPTED):
            return self.last_delivery
        return None
