"""The `railyard` check-run: whether a pull request's head commit carries accepted work.

SPEC ("What people see"): `completed/success` only when every ticket linked to the PR is
accepted at that head commit; otherwise `completed/action_required` with the reason as the
title. Never `neutral` or `skipped`, which GitHub counts as passing. A PR that links no
ticket gets the repository's `checks.unlinked` conclusion, except a PR opened by an account
holding only the runner role, which must link its ticket.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from policies.model import Ticket
from policies.states import WorkState

CHECK_NAME = "railyard"


class Conclusion(StrEnum):
    """The only two conclusions railyard's check ever has."""

    SUCCESS = "success"
    ACTION_REQUIRED = "action_required"


@dataclass(frozen=True)
class Linked:
    """One ticket a PR links, as railyard knows it (None: the issue is not a ticket)."""

    number: int
    ticket: Ticket | None


@dataclass(frozen=True)
class Verdict:
    """The check's conclusion, its title, and one line per linked ticket."""

    conclusion: Conclusion
    title: str
    lines: tuple[str, ...] = ()


_WAITING = {
    WorkState.DRAFT: "awaiting publication",
    WorkState.OPEN: "awaiting claim",
    WorkState.DELIVERED: "awaiting review",
}


def blocking_reason(ticket: Ticket | None, head_sha: str | None) -> str | None:
    """Why `ticket` does not pass the check at `head_sha`, or None when it is accepted there."""
    if ticket is None or ticket.work is None:
        return "not a ticket"
    if ticket.work is WorkState.CLAIMED:
        return "sent back" if ticket.sent_back else "awaiting delivery"
    if ticket.work is not WorkState.ACCEPTED:
        return _WAITING[ticket.work]
    accepted_at = ticket.review.commit if ticket.review else None
    if head_sha is None or accepted_at != head_sha:
        return "accepted commit differs from head"
    return None


def verdict(
    head_sha: str | None,
    linked: Sequence[Linked],
    *,
    unlinked_passes: bool = True,
    author_only_runner: bool = False,
) -> Verdict:
    """The check on one PR head, given every ticket the PR links."""
    if not linked:
        if author_only_runner:
            return Verdict(Conclusion.ACTION_REQUIRED, "link the ticket")
        if unlinked_passes:
            return Verdict(Conclusion.SUCCESS, "no linked ticket")
        return Verdict(Conclusion.ACTION_REQUIRED, "link the ticket")
    ordered = sorted(linked, key=lambda item: item.number)
    reasons = [(item.number, blocking_reason(item.ticket, head_sha)) for item in ordered]
    lines = tuple(f"#{number}: {reason or 'accepted at this commit'}" for number, reason in reasons)
    blocking = [(number, reason) for number, reason in reasons if reason is not None]
    if not blocking:
        count = "the linked ticket is" if len(linked) == 1 else f"all {len(linked)} linked tickets are"
        return Verdict(Conclusion.SUCCESS, f"{count} accepted at this commit", lines)
    number, reason = blocking[0]
    more = f" (and {len(blocking) - 1} more)" if len(blocking) > 1 else ""
    return Verdict(Conclusion.ACTION_REQUIRED, f"#{number}: {reason}{more}", lines)
