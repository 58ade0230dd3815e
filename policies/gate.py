"""The deployment gate's decision (SPEC *Deployment gate*).

A deployment to a gated environment brings the tickets whose merge commit its sha contains and
the environment's last successful deployment does not. railyard approves it only when every
such ticket's acceptance is valid now, and rejects it otherwise, naming each ticket and why.
Merges in that range that belong to no ticket pass or fail by `deployments.unticketed`.

Pure: the validity of each acceptance is judged at the edge (`handlers.acceptance`, roles asked
again) and handed in; nothing here reads a clock or GitHub.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from policies.acceptance import InvalidReason, Validity


class GateState(StrEnum):
    """The answer railyard gives GitHub (the callback's `state`)."""

    APPROVED = "approved"
    REJECTED = "rejected"


class Unticketed(StrEnum):
    """`deployments.unticketed`: whether merges that belong to no ticket may pass."""

    ALLOW = "allow"
    REJECT = "reject"


class Blocker(StrEnum):
    """Why one ticket holds a deployment back, in the order they are judged."""

    NOT_ACCEPTED = "not_accepted"
    EXPIRED = "expired"
    INVALID = "invalid"
    UNVERIFIED = "unverified"  # GitHub would not say whether the reviewer still holds the role
    CI_FAILED = "ci_failed"


@dataclass(frozen=True)
class TicketInRange:
    """One ticket the deployment brings: its acceptance judged now (None: not accepted), the CI
    state that acceptance recorded (`passed`, `failed`, ...), and whether the pull request that
    merged it carried what was accepted (the accepted commit, or one with the same tree).
    `roles_verified` False: GitHub would not say whether the reviewer still holds the role, so
    the acceptance cannot be shown to hold (`validity` is then None)."""

    number: int
    validity: Validity | None
    ci: str = "none"
    merged_as_accepted: bool = True
    roles_verified: bool = True


@dataclass(frozen=True)
class TicketVerdict:
    """One ticket's part in the decision: nothing blocks it, or why it blocks (for `invalid`,
    the acceptance's reason; None when what merged is not what was accepted)."""

    number: int
    blocker: Blocker | None = None
    invalid_reason: InvalidReason | None = None


@dataclass(frozen=True)
class GateDecision:
    """The decision on one deployment: its state, each ticket's verdict, the unticketed merges."""

    state: GateState
    tickets: tuple[TicketVerdict, ...]
    unticketed: tuple[int, ...] = ()  # pull requests merged in the range that link no ticket
    unticketed_policy: Unticketed = Unticketed.ALLOW
    commit_known: bool = True  # False: GitHub knows no such commit, so nothing can be judged
    merges_unrecorded: bool = False
    """True: a merge of the repository stayed unprocessed past the gate's wait, so what the
    deployment brings is not known and nothing was judged."""
    config_unusable: bool = False
    """True: the repository's configuration in force cannot be used (its file, or the file it
    starts from, is broken), so what the gate requires is not known and nothing was judged."""
    unjudged: bool = False
    """True: the reads the decision needs kept failing (GitHub down past the gate's patience) or
    were refused, so nothing was judged."""
    unmerged: tuple[str, ...] = ()
    """Commits in the range no recorded pull request merged (pushed straight to the branch, or
    merged by a pull request railyard did not record): counted with `unticketed_policy`."""

    @property
    def approved(self) -> bool:
        """Whether the deployment may go on."""
        return self.state is GateState.APPROVED

    @property
    def blocking(self) -> tuple[TicketVerdict, ...]:
        """The tickets that hold the deployment back, by number."""
        return tuple(verdict for verdict in self.tickets if verdict.blocker is not None)

    @property
    def unticketed_block(self) -> bool:
        """Whether the merges that belong to no ticket hold the deployment back."""
        return bool(self.unticketed) and self.unticketed_policy is Unticketed.REJECT

    @property
    def unmerged_block(self) -> bool:
        """Whether commits that no recorded pull request merged hold the deployment back."""
        return bool(self.unmerged) and self.unticketed_policy is Unticketed.REJECT


def verdict_of(ticket: TicketInRange) -> TicketVerdict:
    """Whether one ticket lets the deployment go: accepted, holding now, merged as accepted, its
    recorded CI not failed."""
    validity = ticket.validity
    if not ticket.roles_verified:
        return TicketVerdict(ticket.number, Blocker.UNVERIFIED)
    if validity is None:
        return TicketVerdict(ticket.number, Blocker.NOT_ACCEPTED)
    if not validity.valid:
        if validity.reason is InvalidReason.EXPIRED:
            return TicketVerdict(ticket.number, Blocker.EXPIRED, InvalidReason.EXPIRED)
        return TicketVerdict(ticket.number, Blocker.INVALID, validity.reason)
    if not ticket.merged_as_accepted:
        return TicketVerdict(ticket.number, Blocker.INVALID)
    if ticket.ci == "failed":
        return TicketVerdict(ticket.number, Blocker.CI_FAILED)
    return TicketVerdict(ticket.number)


def decide_gate(
    tickets: Iterable[TicketInRange],
    unticketed: Iterable[int],
    policy: Unticketed,
    *,
    commit_known: bool = True,
    merges_unrecorded: bool = False,
    config_unusable: bool = False,
    unjudged: bool = False,
    unmerged: Iterable[str] = (),
) -> GateDecision:
    """Approve when every ticket in the range lets the deployment go and no unticketed merge is
    refused by `policy`; reject otherwise, and always when what the deployment brings or what
    it must meet cannot be known: a commit GitHub does not know, a merge railyard has not
    recorded in time, a configuration that cannot be used, reads that kept failing. Tickets and
    merges are listed once each, by number."""
    if unjudged:
        return GateDecision(GateState.REJECTED, (), (), policy, unjudged=True)
    if config_unusable:
        return GateDecision(GateState.REJECTED, (), (), policy, config_unusable=True)
    if not commit_known:
        return GateDecision(GateState.REJECTED, (), (), policy, commit_known=False)
    if merges_unrecorded:
        return GateDecision(GateState.REJECTED, (), (), policy, merges_unrecorded=True)
    by_number = {ticket.number: ticket for ticket in tickets}
    verdicts = tuple(verdict_of(by_number[number]) for number in sorted(by_number))
    merges, loose = tuple(sorted(set(unticketed))), tuple(sorted(set(unmerged)))
    unallowed = bool(merges or loose) and policy is Unticketed.REJECT
    blocked = any(v.blocker is not None for v in verdicts) or unallowed
    state = GateState.REJECTED if blocked else GateState.APPROVED
    return GateDecision(state, verdicts, merges, policy, unmerged=loose)


def gated_operation_id(repository: str, number: int, environment: str, request: str) -> str:
    """One `deployment_gated` per ticket and protection-rule request (`request`: the deployment's
    id, or the run, sha and webhook delivery when GitHub created no deployment): a redelivery
    records nothing new."""
    return f"gated:{repository.casefold()}#{number}:{environment}:{request}"
