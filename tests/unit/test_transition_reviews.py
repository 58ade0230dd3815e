"""The work rail's review guards (SPEC: "Commands"): independence, self-verification, overrides and
stale decisions."""

from __future__ import annotations

from dataclasses import replace

import pytest

from policies.commands import Accept, AcceptMode, Command, Deliver, SendBack
from policies.events import EventType
from policies.model import Actor
from policies.refusals import RefusalCode
from policies.states import ReviewKind, Role, SelfVerification, WorkState
from tests.unit.work_walk import (
    ACTORS,
    CODY,
    DELIVERY_MINUTE,
    FIRST_COMMIT,
    MONA,
    RITA,
    SECOND_COMMIT,
    context,
    events_of,
    refusal_code,
    run,
    sent_back_ticket,
    ticket_in,
)

# -- independence and self-verification --------------------------------------------------

CODY_REVIEWING = ACTORS["claimant+reviewer"]


def test_runner_cannot_accept_own_delivery() -> None:
    """The delivery's runner holding reviewer still cannot record an independent review."""
    ticket = ticket_in(WorkState.DELIVERED)
    assert refusal_code(ticket, Accept(), context(CODY_REVIEWING, 10)) is RefusalCode.NOT_INDEPENDENT


def test_runner_cannot_send_back_own_delivery() -> None:
    """The delivery's runner holding reviewer cannot send their own work back."""
    ticket = ticket_in(WorkState.DELIVERED)
    send_back = SendBack(feedback="I changed my mind.")
    assert refusal_code(ticket, send_back, context(CODY_REVIEWING, 10)) is RefusalCode.NOT_INDEPENDENT


def test_self_acceptance_by_the_runner_is_recorded_as_self_verified() -> None:
    """`--self` by the delivering runner who holds reviewer is recorded as self-verified, not a review."""
    ticket = run(ticket_in(WorkState.DELIVERED), Accept(mode=AcceptMode.SELF), context(CODY_REVIEWING, 10))
    assert ticket.work is WorkState.ACCEPTED
    assert ticket.review is not None
    assert ticket.review.kind is ReviewKind.SELF_VERIFIED
    assert (ticket.review.attempt, ticket.review.commit) == (1, FIRST_COMMIT)


def test_self_acceptance_is_refused_on_a_high_risk_ticket() -> None:
    """A high-risk ticket needs an independent review, so `--self` is refused."""
    ctx = replace(context(CODY_REVIEWING, 10), high_risk=True)
    ticket = ticket_in(WorkState.DELIVERED)
    assert refusal_code(ticket, Accept(mode=AcceptMode.SELF), ctx) is RefusalCode.SELF_NOT_ALLOWED


def test_self_acceptance_is_refused_when_self_verification_is_never() -> None:
    """With `self_verification: never`, `--self` is refused even for an eligible runner."""
    ctx = replace(context(CODY_REVIEWING, 10), self_verification=SelfVerification.NEVER)
    ticket = ticket_in(WorkState.DELIVERED)
    assert refusal_code(ticket, Accept(mode=AcceptMode.SELF), ctx) is RefusalCode.SELF_NOT_ALLOWED


@pytest.mark.parametrize("reason", ["", "   \n\t"], ids=["empty", "blank"])
def test_override_needs_a_reason(reason: str) -> None:
    """`/accept --override` without a reason is refused for missing text."""
    override = Accept(mode=AcceptMode.OVERRIDE, reason=reason)
    ticket = ticket_in(WorkState.DELIVERED)
    assert refusal_code(ticket, override, context(MONA, 10)) is RefusalCode.MISSING_TEXT


def test_override_waives_independence_and_high_risk_and_is_recorded_as_an_override() -> None:
    """A maintainer who delivered a high-risk ticket may override; it is recorded as an override."""
    cody_maintaining = Actor("cody", frozenset({Role.RUNNER, Role.REPOSITORY_MAINTAINER}))
    ctx = replace(context(cody_maintaining, 10), high_risk=True)
    override = Accept(mode=AcceptMode.OVERRIDE, reason="Hotfix verified in staging.")
    ticket = run(ticket_in(WorkState.DELIVERED), override, ctx)
    assert ticket.work is WorkState.ACCEPTED
    assert ticket.review is not None
    assert ticket.review.kind is ReviewKind.OVERRIDE
    assert ticket.review.reason == "Hotfix verified in staging."


# -- stale decisions ---------------------------------------------------------------------

DECISIONS: dict[str, Command] = {
    "accept": Accept(),
    "send-back": SendBack(feedback="The retry loop still never stops."),
}


@pytest.mark.parametrize("decision", list(DECISIONS))
@pytest.mark.parametrize(
    ("minute", "comment_id"),
    [(DELIVERY_MINUTE - 1, 999), (DELIVERY_MINUTE, 103)],
    ids=["created-earlier", "same-time-lower-comment-id"],
)
def test_decision_written_before_the_current_delivery_comment_is_refused_as_stale(
    decision: str, minute: int, comment_id: int
) -> None:
    """An accept or send-back created before the /deliver comment (ties by comment id) is stale."""
    ticket = ticket_in(WorkState.DELIVERED)
    ctx = context(RITA, minute, comment_id=comment_id)
    assert refusal_code(ticket, DECISIONS[decision], ctx) is RefusalCode.STALE_DECISION


@pytest.mark.parametrize("decision", list(DECISIONS))
@pytest.mark.parametrize(
    ("minute", "comment_id"),
    [(DELIVERY_MINUTE + 1, 50), (DELIVERY_MINUTE, 105)],
    ids=["created-later", "same-time-higher-comment-id"],
)
def test_decision_written_after_the_current_delivery_comment_is_not_stale(
    decision: str, minute: int, comment_id: int
) -> None:
    """An accept or send-back created after the /deliver comment (ties by comment id) goes through."""
    ticket = ticket_in(WorkState.DELIVERED)
    events = events_of(ticket, DECISIONS[decision], context(RITA, minute, comment_id=comment_id))
    assert events[-1].type in {EventType.ACCEPTED, EventType.SENT_BACK}


@pytest.mark.parametrize("decision", list(DECISIONS))
def test_decision_about_an_older_attempt_is_stale_after_a_redelivery(decision: str) -> None:
    """A decision written between attempt 1's and attempt 2's deliveries refers to attempt 1."""
    second = Deliver(summary="Second pass.", commit=SECOND_COMMIT)
    ticket = run(sent_back_ticket(), second, context(CODY, 8))
    assert refusal_code(ticket, DECISIONS[decision], context(RITA, 6)) is RefusalCode.STALE_DECISION
