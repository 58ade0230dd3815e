"""Loops that cannot run for ever, and what a delivery cost (SPEC *Watchdog, budgets and loops*,
*Evidence and telemetry*): the attempt limit, no progress against every earlier delivery, the
evidence `/deliver` reports, and the cost budgets. The pure core and the parser."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.store.codec import ticket_from_data, ticket_to_data
from app.web.api_evidence import EvidenceError, with_evidence
from policies.commands import Claim, Deliver, SendBack
from policies.engine import decide
from policies.events import EventType
from policies.evidence import canonical_cost, evidence_problem
from policies.model import Evidence
from policies.parser import parse_comment
from policies.refusals import Refusal, RefusalCode
from policies.states import WorkState
from tests.unit.work_walk import CODY, RITA, context, events_of, run, ticket_in

A, B = "a" * 40, "b" * 40


def delivered(commit: str, minute: int, ticket=None, **more: object):  # type: ignore[no-untyped-def]
    """`ticket` (or the walk's claimed ticket) delivered at `commit`."""
    ticket = ticket if ticket is not None else ticket_in(WorkState.CLAIMED)
    return run(ticket, Deliver("Work.", commit=commit), replace(context(CODY, minute), **more))  # type: ignore[arg-type]


def sent_back(ticket, minute: int):  # type: ignore[no-untyped-def]
    return run(ticket, SendBack("Again."), context(RITA, minute))


# -- loops ---------------------------------------------------------------------------------------


def test_a_b_a_is_refused_at_the_third_delivery_naming_attempt_1() -> None:
    """Going back to attempt 1's commit after attempt 2's is a loop: `no_progress`, attempt 1 named."""
    ticket = sent_back(delivered(A, 10), 11)
    ticket = sent_back(delivered(B, 12, ticket), 13)
    decision = decide(ticket, Deliver("Back to the first idea.", commit=A), context(CODY, 14))
    assert isinstance(decision, Refusal) and decision.code is RefusalCode.NO_PROGRESS
    assert "attempt 1's delivery" in decision.reason
    assert not isinstance(decide(ticket, Deliver("New.", commit="c" * 40), context(CODY, 14)), Refusal)


def test_naming_the_same_artifact_twice_is_not_progress() -> None:
    """Attempt 1 delivered A with one report and was sent back; attempt 2 delivers A with the same
    report written twice: the same work, refused as `no_progress`."""
    report = "https://ci.example.com/run/1"
    ticket = sent_back(
        run(ticket_in(WorkState.CLAIMED), Deliver("Work.", commit=A, artifacts=(report,)), context(CODY, 10)),
        11,
    )
    again = Deliver("Same again.", commit=A, artifacts=(report, report))
    decision = decide(ticket, again, context(CODY, 12))
    assert isinstance(decision, Refusal) and decision.code is RefusalCode.NO_PROGRESS, decision


def test_an_artifact_named_twice_in_a_comment_is_one_artifact() -> None:
    """`/deliver artifact=U artifact=U` delivers one artifact U; other artifacts keep their order."""
    parsed = parse_comment(
        "/deliver artifact=https://a.example/1 artifact=https://b.example/2 artifact=https://a.example/1\nDone."
    )
    assert parsed.command is not None and parsed.error is None
    assert parsed.command.artifacts == ("https://a.example/1", "https://b.example/2")  # type: ignore[attr-defined]


def test_the_attempt_limit_refuses_the_claim_or_send_back_that_would_open_attempt_11() -> None:
    """By default ten attempts: the send-back that would open the eleventh is `attempt_limit`."""
    ticket = ticket_in(WorkState.CLAIMED)
    minute = 10
    for attempt in range(1, 10):
        ticket = sent_back(delivered(f"{attempt:040x}", minute, ticket), minute + 1)
        minute += 2
    assert ticket.attempt == 10
    ticket = delivered("f" * 40, minute, ticket)
    decision = decide(ticket, SendBack("Once more."), context(RITA, minute + 1))
    assert isinstance(decision, Refusal) and decision.code is RefusalCode.ATTEMPT_LIMIT
    assert "attempt 11" in decision.reason and "/reopen" in decision.hint
    raised = replace(context(RITA, minute + 1), attempts_per_ticket=20)
    assert not isinstance(decide(ticket, SendBack("Once more."), raised), Refusal)


def test_a_claim_past_the_attempt_limit_is_refused_unless_someone_else_reopened_it() -> None:
    """Attempt 3 of at most 3, given up by its claimant (`/reopen`): the next `/claim` would
    open attempt 4 and is refused. Reopened by a reviewer instead (the hint's rethink), the
    limit counts from there and the claim opens attempt 4."""
    from policies.commands import Reopen

    ticket = ticket_in(WorkState.CLAIMED)
    ticket = sent_back(delivered(A, 10, ticket), 11)
    ticket = sent_back(delivered(B, 12, ticket), 13)
    limited = replace(context(CODY, 15), attempts_per_ticket=3)
    given_up = run(ticket, Reopen("Giving up."), context(CODY, 14))
    decision = decide(given_up, Claim(), limited)
    assert isinstance(decision, Refusal) and decision.code is RefusalCode.ATTEMPT_LIMIT
    rethought = run(ticket, Reopen("Rethink."), context(RITA, 14))
    assert rethought.reopened_at_attempt == 3
    assert run(rethought, Claim(), limited).attempt == 4
    by_an_agent = run(ticket, Reopen("Rethink."), replace(context(RITA, 14), actor_is_agent=True))
    assert by_an_agent.reopened_at_attempt is None
    assert isinstance(decide(by_an_agent, Claim(), limited), Refusal)


def test_a_delivery_that_reopens_accepted_work_counts_against_the_attempt_limit() -> None:
    """`/deliver` on an accepted ticket opens a new attempt like `/claim` and `/send-back` do, so
    it is held to `limits.attempts_per_ticket` too: with at most 2, attempt 2 is delivered after
    the first acceptance, and the delivery that would open attempt 3 is `attempt_limit`. (Found in
    review: a runner and a reviewer (or an agent allowed to accept) alternating `/deliver` and
    `/accept` opened attempts without end.)"""
    from policies.commands import Accept

    limited = replace(context(CODY, 12), attempts_per_ticket=2)
    ticket = run(delivered(A, 10), Accept(), context(RITA, 11))
    assert ticket.work is WorkState.ACCEPTED and ticket.attempt == 1
    ticket = run(ticket, Deliver("A better fix.", commit=B), limited)
    assert ticket.work is WorkState.DELIVERED and ticket.attempt == 2
    ticket = run(ticket, Accept(), context(RITA, 13))
    decision = decide(
        ticket, Deliver("And another.", commit="c" * 40), replace(context(CODY, 14), attempts_per_ticket=2)
    )
    assert isinstance(decision, Refusal) and decision.code is RefusalCode.ATTEMPT_LIMIT, decision
    assert "attempt 3" in decision.reason


# -- evidence --------------------------------------------------------------------------------------


def test_deliver_reads_model_tokens_and_cost_as_evidence() -> None:
    """`/deliver ... model=m1 tokens_in=1200 tokens_out=300 cost=0.42`: the runner's report."""
    parsed = parse_comment("/deliver commit=abcdef1 model=m1 tokens_in=1200 tokens_out=300 cost=0.42 Done.")
    assert isinstance(parsed.command, Deliver)
    assert parsed.command.evidence == Evidence("m1", 1200, 300, "0.42")
    assert parsed.command.summary == "Done."


@pytest.mark.parametrize(
    "argument",
    ["cost=-1", "cost=abc", "cost=1e3", "cost=0.1234567", "cost=99999999", "tokens_in=-5",
     "tokens_out=1.5", "tokens_in=99999999999999", "model=has<angle>"],
)  # fmt: skip
def test_malformed_evidence_is_refused_with_a_clear_message(argument: str) -> None:
    """A bad value is a malformed command naming the argument: nothing runs."""
    parsed = parse_comment(f"/deliver commit=abcdef1 {argument} Done.")
    assert parsed.command is None and parsed.error is not None
    assert argument.split("=")[0] + "=" in parsed.error


@given(cents=st.integers(0, 10**8), micro=st.integers(0, 999_999))
def test_a_cost_is_recorded_exactly(cents: int, micro: int) -> None:
    """Whatever the decimal, the recorded cost is the same amount, and parsing accepts it."""
    text = f"{cents // 100}.{micro:06d}"
    if Decimal(text) > Decimal(1_000_000):
        assert evidence_problem("cost", text) is not None
        return
    assert evidence_problem("cost", text) is None
    assert Decimal(canonical_cost(text)) == Decimal(text)


def test_costs_are_summed_on_the_ticket_and_survive_the_snapshot() -> None:
    """Two deliveries reporting $0.42 and $1.08: the ticket's cost is $1.50, tokens summed."""
    ticket = ticket_in(WorkState.CLAIMED)
    first = Deliver("One.", commit=A, evidence=Evidence("m1", 1200, 300, "0.42"))
    ticket = sent_back(run(ticket, first, context(CODY, 10)), 11)
    second = Deliver("Two.", commit=B, evidence=Evidence("m2", 100, 50, "1.08"))
    ticket = run(ticket, second, context(CODY, 12))
    assert (Decimal(ticket.cost_usd), ticket.input_tokens, ticket.output_tokens) == (
        Decimal("1.5"),
        1300,
        350,
    )
    assert ticket.last_delivery is not None and ticket.last_delivery.evidence == second.evidence
    assert ticket_from_data(ticket.key, ticket.revision, ticket_to_data(ticket)) == ticket


def test_the_api_evidence_object_is_read_as_the_same_arguments() -> None:
    """`evidence` beside `/deliver` becomes its arguments; anything else is a clear 400."""
    text = with_evidence(
        "/deliver commit=abcdef1\nDone.", {"model": "m1", "input_tokens": 12, "cost_usd": 0.42}
    )
    parsed = parse_comment(text)
    assert isinstance(parsed.command, Deliver) and parsed.command.evidence == Evidence("m1", 12, None, "0.42")
    for bad in ([1], {"price": 1}, {"input_tokens": "12"}, {"cost_usd": -1}, {"model": "a b"}):
        with pytest.raises(EvidenceError):
            with_evidence("/deliver commit=abcdef1 Done.", bad)
    with pytest.raises(EvidenceError):
        with_evidence("/claim", {"model": "m1"})


# -- budgets ---------------------------------------------------------------------------------------


def test_a_delivery_past_the_ticket_budget_records_over_budget_once() -> None:
    """`limits.cost_per_ticket: 1`: the delivery that passes $1 records `over_budget`; later ones don't."""
    ticket = ticket_in(WorkState.CLAIMED)
    cheap = Deliver("One.", commit=A, evidence=Evidence(cost_usd="0.60"))
    events = events_of(ticket, cheap, replace(context(CODY, 10), cost_per_ticket="1"))
    assert [e.type for e in events] == [EventType.DELIVERED]
    ticket = sent_back(run(ticket, cheap, replace(context(CODY, 10), cost_per_ticket="1")), 11)
    dear = Deliver("Two.", commit=B, evidence=Evidence(cost_usd="0.60"))
    events = events_of(ticket, dear, replace(context(CODY, 12), cost_per_ticket="1"))
    assert [e.type for e in events] == [EventType.DELIVERED, EventType.OVER_BUDGET]
    assert events[1].data["cost_usd"] == "1.20"
    ticket = sent_back(run(ticket, dear, replace(context(CODY, 12), cost_per_ticket="1")), 13)
    assert ticket.over_budget
    third = Deliver("Three.", commit="c" * 40, evidence=Evidence(cost_usd="5"))
    again = events_of(ticket, third, replace(context(CODY, 14), cost_per_ticket="1"))
    assert [e.type for e in again] == [EventType.DELIVERED]


def test_a_runner_over_its_monthly_budget_cannot_claim() -> None:
    """Spent $10 this month with a $10 limit: `/claim` is `budget_exhausted`; $9.99 may claim."""
    ticket = ticket_in(WorkState.OPEN)
    over = replace(context(CODY, 10), cost_per_runner_month="10", runner_month_cost="10")
    decision = decide(ticket, Claim(), over)
    assert isinstance(decision, Refusal) and decision.code is RefusalCode.BUDGET_EXHAUSTED
    under = replace(over, runner_month_cost="9.99")
    assert not isinstance(decide(ticket, Claim(), under), Refusal)
