"""Whether an acceptance still holds (SPEC *Acceptance that stays true*).

An acceptance is a decision about one delivery, made by one account, under one policy, at one
time. It counts only while what it rested on still holds: it is not past its expiry, the account
still holds a role that could make that decision, and (for a self-verification) self-verification
is still allowed and the ticket still not high-risk. Once it stops holding, railyard records
`acceptance_invalidated` once, and only a new `/accept` (a renewal) makes the ticket's acceptance
hold again: a reviewer given the role back does not revive a decision the record already says
lapsed.

`judge` is a function of the review and of what is true now (`Standing`), never of the order the
facts were learnt in. Nothing here performs I/O or reads a clock.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from policies.clocks import after
from policies.model import Review, Ticket
from policies.states import ReviewKind, Role, SelfVerification, WorkState

MAX_EXPIRY_DAYS = 3650
"""`acceptance.expires_after_days` at most: ten years (a longer one is a typo, and dates overflow)."""


class InvalidReason(StrEnum):
    """Why an acceptance stopped holding; recorded on `acceptance_invalidated`."""

    EXPIRED = "expired"
    REVIEWER_LOST_ROLE = "reviewer_lost_role"
    NOW_HIGH_RISK = "now_high_risk"
    SELF_VERIFICATION_DISALLOWED = "self_verification_disallowed"


ROLES_FOR: dict[ReviewKind, frozenset[Role]] = {
    ReviewKind.INDEPENDENT: frozenset({Role.REVIEWER}),
    ReviewKind.SELF_VERIFIED: frozenset({Role.REVIEWER}),
    ReviewKind.OVERRIDE: frozenset({Role.REPOSITORY_MAINTAINER, Role.RELEASE_OWNER}),
}
"""The roles, any one of which could have made each kind of decision (the `/accept` rows)."""


@dataclass(frozen=True)
class Standing:
    """What is true now that an acceptance rests on, read at the edge when it is judged.

    `reviewer_roles` are the roles the accepting account holds now, of `ROLES_FOR` its kind;
    None when they were not asked (then the role is not judged, only the rest).
    """

    at: datetime
    expires_after_days: int | None = 30
    self_verification: SelfVerification = SelfVerification.EXPLICIT
    high_risk: bool = False
    reviewer_roles: frozenset[Role] | None = None


@dataclass(frozen=True)
class Validity:
    """The verdict on one acceptance: whether it holds, why not, and when it expires."""

    valid: bool
    reason: InvalidReason | None = None
    expires_at: datetime | None = None
    recorded: bool = False  # the reason is already in the record (`acceptance_invalidated`)
    unverified: bool = False
    """Valid by everything judged, but GitHub would not confirm the reviewer's roles now: not
    judged, nothing recorded, and nothing that relies on the acceptance now may pass on it."""


def expires_at(review: Review, days: int | None) -> datetime | None:
    """When `review` expires (None: never): as bound when it was made, under the
    `expires_after_days` then in force; for one recorded before expiries were bound, `days`
    from when it was recorded. A changed setting applies to acceptances made after it."""
    if review.expiry_bound:
        return review.expires_at
    if days is None:
        return None
    return after(review.written_at, timedelta(days=min(max(days, 1), MAX_EXPIRY_DAYS)))


def judge(review: Review, standing: Standing) -> Validity:
    """Whether `review` holds given `standing`; the first reason, in `InvalidReason` order, if not.

    A reason already recorded stands whatever is true now (see the module).
    """
    expiry = expires_at(review, standing.expires_after_days)
    if review.invalidated is not None:
        return Validity(False, InvalidReason(review.invalidated), expiry, recorded=True)
    reason = lapsed(review, standing, expiry)
    return Validity(reason is None, reason, expiry)


def lapsed(review: Review, standing: Standing, expiry: datetime | None) -> InvalidReason | None:
    """Why `review` no longer holds at `standing`, ignoring what the record already says."""
    if expiry is not None and standing.at >= expiry:
        return InvalidReason.EXPIRED
    roles = standing.reviewer_roles
    if roles is not None and not roles & ROLES_FOR[review.kind]:
        return InvalidReason.REVIEWER_LOST_ROLE
    if review.kind is ReviewKind.SELF_VERIFIED:
        if standing.high_risk:
            return InvalidReason.NOW_HIGH_RISK
        if standing.self_verification is SelfVerification.NEVER:
            return InvalidReason.SELF_VERIFICATION_DISALLOWED
    return None


def holds_at(review: Review, head_sha: str | None, head_tree: str | None) -> bool:
    """Whether the head being judged carries what was accepted: the accepted commit itself, or a
    commit with the same tree sha (an amended message or a re-signed commit: the same content)."""
    if head_sha is None or review.commit is None:
        return False
    if head_sha.casefold() == review.commit.casefold():
        return True
    return review.tree is not None and head_tree is not None and head_tree == review.tree


def description_digest(title: str | None, body: str | None) -> str:
    """sha256 over the issue's title and body as they are now (the description the work answers)."""
    canonical = json.dumps([title or "", body or ""], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def recorded_validity(ticket: Ticket, now: datetime | None) -> Validity | None:
    """The current acceptance judged from the record (and its expiry at `now`); None without one.

    Roles and labels are judged where they are asked of GitHub (the check-run, `/status`, the
    hourly re-check), which record `acceptance_invalidated` when one no longer holds.
    """
    review = ticket.review
    if ticket.work is not WorkState.ACCEPTED or review is None:
        return None
    if now is None:
        return judge(review, Standing(at=datetime.min.replace(tzinfo=UTC), expires_after_days=None))
    return judge(review, Standing(at=now))
