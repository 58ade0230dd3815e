"""The work rail's delivery guards (SPEC: "Commands"), and attempts across send-back and reopen."""

from __future__ import annotations

import pytest

from policies.commands import Accept, Claim, Command, Deliver, Publish, Reopen, SendBack
from policies.events import EventType
from policies.model import Actor, Ticket
from policies.refusals import RefusalCode
from policies.states import Qualification, Relation, Role, WorkState
from tests.unit.work_walk import (
    CODY,
    FIRST_COMMIT,
    KEY,
    OLIVIA_PUBLISHING,
    RITA,
    RUTH,
    SECOND_COMMIT,
    context,
    events_of,
    refusal_code,
    run,
    sent_back_ticket,
    ticket_in,
)

# -- deliveries --------------------------------------------------------------------------


def test_same_commit_and_artifacts_with_a_new_summary_is_refused_as_no_progress() -> None:
    """Redelivering attempt 1's commit and artifacts under a new summary is not progress."""
    same_work = Deliver(summary="A much better summary of the same work.", commit=FIRST_COMMIT)
    assert refusal_code(sent_back_ticket(), same_work, context(CODY, 8)) is RefusalCode.NO_PROGRESS


def test_redelivering_the_accepted_work_unchanged_is_refused_as_no_progress() -> None:
    """After acceptance, a new delivery must bring a new commit or artifacts."""
    same_work = Deliver(summary="Reopening my own delivery.", commit=FIRST_COMMIT)
    accepted = ticket_in(WorkState.ACCEPTED)
    assert refusal_code(accepted, same_work, context(CODY, 8)) is RefusalCode.NO_PROGRESS


@pytest.mark.parametrize(
    "deliver",
    [
        Deliver(summary="Second pass.", commit=SECOND_COMMIT),
        Deliver(summary="Second pass.", commit=FIRST_COMMIT, artifacts=("https://ci.example/run/9",)),
    ],
    ids=["new-commit", "same-commit-new-artifact"],
)
def test_a_new_commit_or_a_new_artifact_is_progress(deliver: Deliver) -> None:
    """A delivery that changes the commit or the artifacts is accepted as a new delivery."""
    ticket = run(sent_back_ticket(), deliver, context(CODY, 8))
    assert ticket.work is WorkState.DELIVERED
    assert ticket.deliveries == 2


def no_code_claimed_ticket() -> Ticket:
    """A ticket published with `--no-code` and claimed by cody."""
    publish = Publish(description="Write the outage runbook.", no_code=True)
    ticket = run(Ticket(KEY), publish, context(OLIVIA_PUBLISHING, 1))
    assert ticket.no_code
    return run(ticket, Claim(), context(CODY, 2))


@pytest.mark.parametrize(
    "deliver",
    [
        Deliver(summary="Wrote the runbook.", commit=FIRST_COMMIT),
        Deliver(summary="Wrote the runbook.", branch="agent/7-runbook"),
        Deliver(summary="Wrote the runbook.", pull_request=12),
    ],
    ids=["commit", "branch", "pull-request"],
)
def test_no_code_delivery_without_an_artifact_url_is_refused(deliver: Deliver) -> None:
    """A no-code ticket's delivery needs `artifact=URL`; code artifacts do not count."""
    ticket = no_code_claimed_ticket()
    assert refusal_code(ticket, deliver, context(CODY, 10)) is RefusalCode.MISSING_ARTIFACT


def test_no_code_delivery_with_an_artifact_url_is_recorded() -> None:
    """A no-code ticket's delivery with `artifact=URL` is recorded with that artifact."""
    deliver = Deliver(summary="Wrote the runbook.", artifacts=("https://wiki.example/runbook",))
    ticket = run(no_code_claimed_ticket(), deliver, context(CODY, 10))
    assert ticket.work is WorkState.DELIVERED
    assert ticket.last_delivery is not None
    assert ticket.last_delivery.artifacts == ("https://wiki.example/runbook",)


@pytest.mark.parametrize(
    ("state", "command", "actor"),
    [
        (WorkState.CLAIMED, Deliver(summary="  \n", commit=SECOND_COMMIT), CODY),
        (WorkState.DELIVERED, SendBack(feedback=" "), RITA),
        (WorkState.CLAIMED, Reopen(reason=""), RITA),
        (WorkState.ACCEPTED, Reopen(reason="\t"), Actor("olivia")),
    ],
    ids=[
        "deliver-without-summary",
        "send-back-without-feedback",
        "reopen-without-reason",
        "reopen-accepted-without-reason",
    ],
)
def test_commands_that_need_text_refuse_blank_text(state: WorkState, command: Command, actor: Actor) -> None:
    """A delivery summary, send-back feedback and a reopen reason are required."""
    ticket = ticket_in(state)
    assert refusal_code(ticket, command, context(actor, 10)) is RefusalCode.MISSING_TEXT


def test_delivery_without_any_artifact_is_refused() -> None:
    """A delivery needs a branch, a commit, a linked PR or an artifact URL."""
    bare = Deliver(summary="Trust me, it works.")
    assert refusal_code(ticket_in(WorkState.CLAIMED), bare, context(CODY, 10)) is RefusalCode.MISSING_ARTIFACT


# -- attempts, send-back and reopen ------------------------------------------------------


def test_send_back_keeps_the_claimant_and_starts_a_new_attempt() -> None:
    """After a send-back the same claimant works on attempt 2; attempt 1's delivery stays as history."""
    ticket = sent_back_ticket()
    assert ticket.work is WorkState.CLAIMED
    assert ticket.claimant == "cody"
    assert ticket.attempt == 2
    assert ticket.last_delivery is not None
    assert (ticket.last_delivery.attempt, ticket.last_delivery.runner) == (1, "cody")
    second = Deliver(summary="Second pass.", commit=SECOND_COMMIT)
    assert refusal_code(ticket, second, context(RUTH, 8)) is RefusalCode.NOT_ALLOWED
    redelivered = run(ticket, second, context(CODY, 8))
    assert redelivered.last_delivery is not None
    assert (redelivered.last_delivery.attempt, redelivered.last_delivery.runner) == (2, "cody")
    assert redelivered.deliveries == 2


@pytest.mark.parametrize("state", [WorkState.CLAIMED, WorkState.DELIVERED])
@pytest.mark.parametrize("runner", [CODY, RUTH], ids=["previous-claimant", "another-runner"])
def test_reopen_clears_the_claim_and_any_runner_may_claim_again(state: WorkState, runner: Actor) -> None:
    """A reopened ticket has no claimant, and any runner, the previous one included, may claim it."""
    ticket = run(ticket_in(state), Reopen(reason="Wrong approach."), context(RITA, 10))
    assert ticket.work is WorkState.OPEN
    assert ticket.claimant is None
    reclaimed = run(ticket, Claim(), context(runner, 11))
    assert reclaimed.claimant == runner.login
    assert reclaimed.attempt == 2


@pytest.mark.parametrize("state", [WorkState.CLAIMED, WorkState.DELIVERED])
@pytest.mark.parametrize(
    ("actor", "recorded", "released"),
    [
        (CODY, Relation.CLAIMANT, True),
        (RITA, Role.REVIEWER, False),
        (Actor("olivia"), Relation.OWNER, False),
    ],
    ids=["claimant", "reviewer", "owner"],
)
def test_a_claimants_reopen_is_recorded_as_released_by_claimant(
    state: WorkState, actor: Actor, recorded: Qualification, released: bool
) -> None:
    """Only the claimant giving the work up is recorded as released by claimant."""
    (event,) = events_of(ticket_in(state), Reopen(reason="Giving this up."), context(actor, 10))
    assert event.type is EventType.REOPENED
    assert event.role == recorded.value
    assert event.data["released_by_claimant"] is released


def test_attempt_numbers_only_rise_across_claim_send_back_reopen_reclaim_and_redelivery() -> None:
    """Attempts rise at claim, send-back, re-claim and delivery after acceptance, and never fall."""
    steps: list[tuple[Command, Actor]] = [
        (Claim(), CODY),
        (Deliver(summary="First pass.", commit=FIRST_COMMIT), CODY),
        (SendBack(feedback="Still retries."), RITA),
        (Deliver(summary="Second pass.", commit=SECOND_COMMIT), CODY),
        (Reopen(reason="Needs a different approach."), RITA),
        (Claim(), RUTH),
        (Deliver(summary="Third pass.", commit="c0ffee3"), RUTH),
        (Accept(), RITA),
        (Deliver(summary="Follow-up after acceptance.", commit="c0ffee4"), RUTH),
    ]
    ticket = ticket_in(WorkState.OPEN)
    attempts = []
    for minute, (command, actor) in enumerate(steps, start=10):
        ticket = run(ticket, command, context(actor, minute))
        attempts.append(ticket.attempt)
    assert attempts == [1, 1, 2, 2, 2, 3, 3, 3, 4]
    assert ticket.last_delivery is not None
    assert (ticket.last_delivery.attempt, ticket.last_delivery.runner) == (4, "ruth")
