"""Refusals: why a command changed nothing, and what would work instead."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class RefusalCode(StrEnum):
    """Machine-readable reasons, stable across releases."""

    NOT_A_TICKET = "not_a_ticket"
    ALREADY_A_TICKET = "already_a_ticket"
    WRONG_STATE = "wrong_state"
    NOT_ALLOWED = "not_allowed"
    NOT_INDEPENDENT = "not_independent"
    SELF_NOT_ALLOWED = "self_verification_not_allowed"
    MISSING_TEXT = "missing_text"
    INVALID_ARGUMENT = "invalid_argument"
    MISSING_DESCRIPTION = "missing_description"
    MISSING_ARTIFACT = "missing_artifact"
    NO_PROGRESS = "no_progress"
    STALE_DECISION = "stale_decision"
    STALE_REVISION = "stale_revision"
    BUDGET = "over_budget"
    CANNOT_VERIFY = "cannot_verify"
    CONFIG_ERROR = "config_error"
    AGENTS_CANNOT_ACCEPT = "agents_cannot_accept"
    CI_NOT_PASSED = "ci_not_passed"
    ATTEMPT_LIMIT = "attempt_limit"
    BUDGET_EXHAUSTED = "budget_exhausted"


@dataclass(frozen=True)
class Refusal:
    """A command that changed nothing: what was refused, why, and what would work.

    `transient` refusals (GitHub unreachable, cannot verify) are not stored as the
    command's final outcome, so the same operation can run again later.
    """

    code: RefusalCode
    reason: str
    hint: str = ""
    transient: bool = False


def stale_revision(subject: str, expected: int, actual: int, *, final: bool) -> Refusal:
    """The refusal of a change made against revision `expected` of a ticket now at `actual`.

    For a command it is `final`: stored and replayed like any refusal, so a redelivered
    comment gets the same answer and never applies later when the revision happens to come
    round to `expected`. For an observation it is transient (observations are not stored).
    """
    return Refusal(
        RefusalCode.STALE_REVISION,
        f"{subject} changed since revision {expected} was read; it is now at revision {actual}.",
        f"Read the ticket again; if the command still holds, send it again with rev={actual}.",
        transient=not final,
    )
