"""The work rail's review guards (SPEC: "Commands"): independence, self-verification, overrides and
stale decisions."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from policies.commands import Accept, AcceptMode, Command, Context, Deliver, SendBack
from policies.engine import decide
from policies.events import EventType
from policies.model import Actor, Ticket
from policies.refusals import Refusal, RefusalCode
from policies.states import ReviewKind, Role, SelfVerification, WorkState
from tests.unit.work_walk import (
    ACTORS,
    CODY,
    DELIVERY_MINUTE,
    FIRST_COMMIT,
    FIRST_DELIVERY,
    MONA,
    RITA,
    SECOND_COMMIT,
    T0,
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


# -- stale decisions across two clocks ------------------------------------------------------
#
# The true timeline is in microseconds. GitHub stamps a comment with the whole second it was
# written in and ids that rise with it; railyard receives it some time later, on its own clock;
# an API delivery is recorded at railyard's time, to the microsecond, with no comment id.

CLAIMED_AT = T0 + timedelta(minutes=3)
micros = st.integers(min_value=0, max_value=10_000_000)  # within ten seconds of the claim
latency = st.integers(min_value=0, max_value=5_000_000)  # a webhook's way from GitHub to railyard


def moment(offset: int) -> datetime:
    """The claim's time plus `offset` microseconds."""
    return CLAIMED_AT + timedelta(microseconds=offset)


def whole_second(offset: int) -> datetime:
    """`created_at` as GitHub writes it for a comment written at `offset`."""
    return moment(offset).replace(microsecond=0)


def api_delivered(recorded: int) -> Ticket:
    """Claimed, then delivered through the API at `recorded` (railyard's clock, no comment id)."""
    ctx = Context(CODY, "api:1:key", moment(recorded), comment_at=moment(recorded), via="api")
    return run(ticket_in(WorkState.CLAIMED), FIRST_DELIVERY, ctx)


def comment_decision(written: int, received: int, comment_id: int = 900) -> Context:
    """rita's `/accept` comment written at `written`, received by railyard at `received`."""
    return Context(
        RITA,
        f"op-{written}",
        moment(received),
        comment_id=comment_id,
        comment_at=whole_second(written),
        received_at=moment(received),
    )


def is_stale(ticket: Ticket, ctx: Context) -> bool:
    """Whether `/accept` is refused as stale."""
    decision = decide(ticket, Accept(), ctx)
    return isinstance(decision, Refusal) and decision.code is RefusalCode.STALE_DECISION


@given(recorded=micros, after=st.integers(min_value=1, max_value=5_000_000), late=latency)
def test_a_review_written_after_an_api_delivery_is_never_stale(recorded: int, after: int, late: int) -> None:
    """Written after the API delivery was recorded, in the same second or later: never refused as stale."""
    written = recorded + after
    assert not is_stale(api_delivered(recorded), comment_decision(written, written + late))


@given(recorded=micros, before=st.integers(min_value=1, max_value=5_000_000), late=latency)
def test_a_review_written_before_an_api_delivery_is_stale_whenever_that_can_be_known(
    recorded: int, before: int, late: int
) -> None:
    """Written before: stale when it is in an earlier second, or railyard received it before recording
    the delivery; only a comment of the delivery's own second received after it cannot be placed."""
    written = recorded - before
    received = written + late
    knowable = whole_second(written) < whole_second(recorded) or received < recorded
    assert is_stale(api_delivered(recorded), comment_decision(written, received)) is knowable


def test_the_reported_case_an_accept_in_the_same_second_as_an_api_deliver_goes_through() -> None:
    """Delivered through the API at 09:03:05.300, `/accept` created at 09:03:05 received later: accepted."""
    ticket = api_delivered(5_300_000)
    decision = decide(ticket, Accept(), comment_decision(5_600_000, 5_900_000))
    assert not isinstance(decision, Refusal)
    assert decision[-1].type is EventType.ACCEPTED


def test_a_review_received_before_an_api_delivery_in_its_second_is_stale() -> None:
    """`/accept` written at 09:03:05.100 and received at .200, the API delivery recorded at .300: stale."""
    assert is_stale(api_delivered(5_300_000), comment_decision(5_100_000, 5_200_000))


@given(delivered=micros, decided=micros, late=latency)
def test_between_two_comments_the_order_they_were_written_decides(
    delivered: int, decided: int, late: int
) -> None:
    """A `/deliver` comment and an `/accept` comment: stale exactly when the accept was written first
    (GitHub's ids rise with the writing, so the same second is ordered too)."""
    assume(delivered != decided)
    first, second = sorted((delivered, decided))
    ids = {first: 1000, second: 1001}
    deliver_ctx = Context(
        CODY, "op-deliver", moment(delivered), comment_id=ids[delivered], comment_at=whole_second(delivered)
    )
    ticket = run(ticket_in(WorkState.CLAIMED), FIRST_DELIVERY, deliver_ctx)
    ctx = comment_decision(decided, max(decided, delivered) + late, comment_id=ids[decided])
    assert is_stale(ticket, ctx) is (decided < delivered)


@given(delivered=micros, skew=st.integers(min_value=-5_000_000, max_value=5_000_000))
def test_an_api_decision_is_never_stale(delivered: int, skew: int) -> None:
    """An API `/accept` runs when it arrives, after the delivery it sees was recorded: never stale."""
    deliver_ctx = Context(
        CODY, "op-deliver", moment(delivered), comment_id=104, comment_at=whole_second(delivered)
    )
    ticket = run(ticket_in(WorkState.CLAIMED), FIRST_DELIVERY, deliver_ctx)
    ctx = Context(RITA, "api:2:key", moment(delivered + skew), comment_at=moment(delivered + skew), via="api")
    assert not is_stale(ticket, ctx)
