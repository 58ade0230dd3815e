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

from policies.acceptance import InvalidReason, Validity, holds_at
from policies.model import Ticket
from policies.states import WorkState

CHECK_NAME = "railyard"


class Conclusion(StrEnum):
    """The only two conclusions railyard's check ever has."""

    SUCCESS = "success"
    ACTION_REQUIRED = "action_required"


@dataclass(frozen=True)
class Linked:
    """One ticket a PR links, as railyard knows it (None: the issue is not a ticket).

    `validity`: its acceptance judged when the check is computed (None: not judged, only what
    the record says counts); `head_tree`: the tree sha of the head being judged, when known.
    """

    number: int
    ticket: Ticket | None
    validity: Validity | None = None
    head_tree: str | None = None


INVALID_WORDS = {
    InvalidReason.EXPIRED: "acceptance expired",
    InvalidReason.REVIEWER_LOST_ROLE: "acceptance no longer holds: the reviewer lost the role",
    InvalidReason.NOW_HIGH_RISK: "acceptance no longer holds: now high-risk, self-verified",
    InvalidReason.SELF_VERIFICATION_DISALLOWED: "acceptance no longer holds: self-verification is disallowed",
}
UNVERIFIED_WORDS = "acceptance cannot be verified now: GitHub would not confirm the reviewer's role"
"""A reviewer's role GitHub will not confirm (a permission withdrawn, an outage) is never taken as
held: the check waits, as the deployment gate does, and passes once it can be confirmed."""


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


def blocking_reason(
    ticket: Ticket | None,
    head_sha: str | None,
    validity: Validity | None = None,
    head_tree: str | None = None,
) -> str | None:
    """Why `ticket` does not pass the check at `head_sha`, or None when it is accepted there: an
    acceptance that no longer holds, or a head with other content than the accepted commit."""
    if ticket is None or ticket.work is None:
        return "not a ticket"
    if ticket.work is WorkState.CLAIMED:
        return "sent back" if ticket.sent_back else "awaiting delivery"
    if ticket.work is not WorkState.ACCEPTED:
        return _WAITING[ticket.work]
    review = ticket.review
    if review is None:
        return "accepted commit differs from head"
    if review.invalidated is not None:
        return INVALID_WORDS[InvalidReason(review.invalidated)]
    if validity is not None and not validity.valid and validity.reason is not None:
        return INVALID_WORDS[validity.reason]
    if validity is not None and validity.unverified:
        return UNVERIFIED_WORDS
    if not holds_at(review, head_sha, head_tree):
        return "accepted commit differs from head"
    return None


def accepted_line(ticket: Ticket | None, head_sha: str | None) -> str:
    """The line of a ticket that passes: accepted at this very commit, or at one with its content."""
    review = ticket.review if ticket is not None else None
    commit: str | None = review.commit if review is not None else None
    if commit is not None and head_sha is not None and head_sha.casefold() != commit.casefold():
        return f"accepted at {commit[:12]}, same content (tree) as this commit"
    return "accepted at this commit"


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
    reasons = [
        (item.number, blocking_reason(item.ticket, head_sha, item.validity, item.head_tree))
        for item in ordered
    ]
    tickets = {item.number: item.ticket for item in ordered}
    lines = tuple(
        f"#{number}: {reason or accepted_line(tickets[number], head_sha)}" for number, reason in reasons
    )
    blocking = [(number, reason) for number, reason in reasons if reason is not None]
    if not blocking:
        count = "the linked ticket is" if len(linked) == 1 else f"all {len(linked)} linked tickets are"
        return Verdict(Conclusion.SUCCESS, f"{count} accepted at this commit", lines)
    number, reason = blocking[0]
    more = f" (and {len(blocking) - 1} more)" if len(blocking) > 1 else ""
    return Verdict(Conclusion.ACTION_REQUIRED, f"#{number}: {reason}{more}", lines)


def outsiders_pull(judged: Verdict, named: Sequence[int]) -> Verdict:
    """The check of a fork's PR whose author holds no role here and whose body names tickets: its
    merge would count for them, yet no runner delivered it, so it never passes, whatever the
    tickets' states (a check that could pass would go stale when they change: it is written
    again only when the PR itself changes). The tickets' own lines stay in the summary."""
    numbers = ", ".join(f"#{n}" for n in named)
    return Verdict(
        Conclusion.ACTION_REQUIRED,
        f"{numbers}: named by a pull request from a fork whose author holds no role here; "
        "its merge would count for them. Have the ticket's runner deliver the work, or drop the link.",
        judged.lines,
    )


def check_name(name: str | None, owner: int | None, app_id: int | None) -> str | None:
    """The name a check is judged by: this app's own (`app_id`) is `railyard`, whatever it is
    called; another app's called `railyard` is named with its app's id, so it is never taken for
    railyard's own (a failing CI job named `railyard` counts like any other)."""
    if app_id is None or owner is None:
        return name
    if owner == app_id:
        return CHECK_NAME
    return f"{CHECK_NAME} (app {owner})" if name == CHECK_NAME else name
