"""Commands as values: what someone asked for, with the facts read when it executes.

The handler resolves everything that needs GitHub (the commit behind a branch, the issue
body, the first assignee, the labels) before the command reaches the core.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import ClassVar

from policies.model import Actor, Evidence
from policies.states import Role, SelfVerification


class CommandName(StrEnum):
    """The state-changing slash-commands, spelled as users type them."""

    DRAFT = "draft"
    PUBLISH = "publish"
    CLAIM = "claim"
    DELIVER = "deliver"
    ACCEPT = "accept"
    SEND_BACK = "send-back"
    REOPEN = "reopen"


class AcceptMode(StrEnum):
    """The three ways to accept, each recorded differently."""

    REVIEW = "review"
    SELF = "self"
    OVERRIDE = "override"


@dataclass(frozen=True)
class Draft:
    """`/draft`: make the issue a draft ticket; `via_label`: it carries the configured ticket label."""

    via_label: bool = False
    name: ClassVar[CommandName] = CommandName.DRAFT


@dataclass(frozen=True)
class Publish:
    """`/publish [--no-code]`: open the ticket for claiming."""

    description: str = ""
    first_assignee: str | None = None
    first_assignee_id: int | None = None
    no_code: bool = False
    labels: tuple[str, ...] = ()  # the labels now, recorded on `published` for the report
    name: ClassVar[CommandName] = CommandName.PUBLISH


MAX_CHECK_IN_MINUTES = 43_200
"""`/claim --check-in` at most: thirty days; longer is a typo, not a plan (and a date overflows)."""


@dataclass(frozen=True)
class Claim:
    """`/claim [--check-in MINUTES] [branch=NAME]`: open a new attempt."""

    check_in_minutes: int | None = None
    branch: str | None = None
    name: ClassVar[CommandName] = CommandName.CLAIM


@dataclass(frozen=True)
class Deliver:
    """`/deliver` + summary: hand the work over; `commit` is already resolved."""

    summary: str = ""
    branch: str | None = None
    commit: str | None = None
    pull_request: int | None = None
    artifacts: tuple[str, ...] = ()
    tree: str | None = None  # the resolved commit's tree sha, when GitHub said it
    evidence: Evidence | None = None  # what the runner reports the run used
    name: ClassVar[CommandName] = CommandName.DELIVER

    @property
    def has_artifact(self) -> bool:
        """At least one of branch, commit, linked PR or artifact URL."""
        return bool(self.branch or self.commit or self.pull_request or self.artifacts)


@dataclass(frozen=True)
class Accept:
    """`/accept`, `/accept --self` or `/accept --override REASON`."""

    mode: AcceptMode = AcceptMode.REVIEW
    reason: str = ""
    name: ClassVar[CommandName] = CommandName.ACCEPT


@dataclass(frozen=True)
class SendBack:
    """`/send-back FEEDBACK`: the same claimant tries again in a new attempt."""

    feedback: str = ""
    name: ClassVar[CommandName] = CommandName.SEND_BACK


@dataclass(frozen=True)
class Reopen:
    """`/reopen REASON`: back to open, the claim cleared."""

    reason: str = ""
    name: ClassVar[CommandName] = CommandName.REOPEN


Command = Draft | Publish | Claim | Deliver | Accept | SendBack | Reopen


@dataclass(frozen=True)
class Context:
    """The circumstances of one execution: who, when, which comment, under which policy."""

    actor: Actor
    operation_id: str
    at: datetime
    comment_id: int | None = None
    comment_at: datetime | None = None  # GitHub's created_at of the comment (whole seconds)
    received_at: datetime | None = None  # when railyard received the comment, on its own clock
    policy_version: str = ""
    high_risk: bool = False
    self_verification: SelfVerification = SelfVerification.EXPLICIT
    environments: tuple[str, ...] = ("production",)
    commands_last_hour: int = 0
    commands_per_hour: int | None = None
    config_error: str | None = None
    on_pull_request: bool = False  # the command was written on a pull request, which never creates a ticket
    via: str | None = None  # how the command came other than by comment ("api"), kept on its events
    # -- what an acceptance binds and is judged by (SPEC: Acceptance that stays true) --
    acceptance_expires_after_days: int | None = 30
    acceptance_ci_required: bool = False  # `acceptance.ci: require`
    agents_may_accept: bool = False  # `acceptance.by: anyone`
    actor_is_agent: bool = False  # a Bot account, or one `agents:` names
    ci_state: str | None = None  # the delivered commit's CI (`policies.ci.CiState`), read now
    ci_checks: tuple[str, ...] = ()  # the checks that decided `ci_state`
    tree: str | None = None  # the delivered commit's tree sha, read now
    description_digest: str | None = None  # the title and body now
    reviewer_roles: frozenset[Role] | None = None  # the current acceptance's reviewer's roles now
    # -- loops and budgets (SPEC: Watchdog, budgets and loops) --
    attempts_per_ticket: int | None = 10  # `limits.attempts_per_ticket`
    cost_per_ticket: str | None = None  # `limits.cost_per_ticket`, USD
    cost_per_runner_month: str | None = None  # `limits.cost_per_runner_month`, USD
    runner_month_cost: str = "0"  # the actor's recorded delivery cost this month (UTC), read now
