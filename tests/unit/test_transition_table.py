"""The work rail as a table: every actor x every state-changing command x every state.

The expected outcome of each cell is written out below from SPEC's command table ("Commands"
and "Roles and configuration"), not derived from `policies.transitions`, so the engine is
checked against the specification rather than against itself. The focused tests after the
table cover the guards SPEC names beside the table.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from policies.commands import (
    Accept,
    AcceptMode,
    Claim,
    Command,
    Context,
    Deliver,
    Draft,
    Publish,
    Reopen,
    SendBack,
)
from policies.engine import apply_all, decide
from policies.events import Event, EventType
from policies.model import Actor, Ticket, TicketKey
from policies.refusals import Refusal, RefusalCode
from policies.states import Qualification, Relation, ReviewKind, Role, SelfVerification, WorkState
from policies.transitions import roles_in_rows

KEY = TicketKey("acme/rockets", 7)
T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
DESCRIPTION = "The uploader retries forever when the bucket is gone."
FIRST_COMMIT = "c0ffee1111111111111111111111111111111111"
SECOND_COMMIT = "c0ffee2222222222222222222222222222222222"

# The walk's fixed people: olivia drafts and publishes (so she owns the ticket), cody claims
# and delivers (the claimant and the delivery's runner), rita reviews.
OLIVIA_PUBLISHING = Actor("olivia", frozenset({Role.REQUESTER}))
CODY = Actor("cody", frozenset({Role.RUNNER}))
RITA = Actor("rita", frozenset({Role.REVIEWER}))
RUTH = Actor("ruth", frozenset({Role.RUNNER}))
MONA = Actor("mona", frozenset({Role.REPOSITORY_MAINTAINER}))

# Table rows: one actor per single role, none of them the owner, claimant or runner of the
# delivery; then the two relations, and the claimant who also holds reviewer.
ACTORS: dict[str, Actor] = {
    "requester": Actor("rhea", frozenset({Role.REQUESTER})),
    "task_owner": Actor("tariq", frozenset({Role.TASK_OWNER})),
    "runner": RUTH,
    "reviewer": RITA,
    "maintainer": MONA,
    "release_owner": Actor("reed", frozenset({Role.RELEASE_OWNER})),
    "owner": Actor("olivia"),
    "claimant": CODY,
    "claimant+reviewer": Actor("cody", frozenset({Role.RUNNER, Role.REVIEWER})),
}

# Valid arguments everywhere, so only state, role and relation decide a cell. The delivery
# names a commit the walk's delivery did not, so `/deliver` after acceptance is progress.
COMMANDS: dict[str, Command] = {
    "/draft": Draft(),
    "/publish": Publish(description=DESCRIPTION),
    "/claim": Claim(),
    "/deliver": Deliver(summary="Stop retrying once the bucket is gone.", commit=SECOND_COMMIT),
    "/accept": Accept(),
    "/accept --self": Accept(mode=AcceptMode.SELF),
    "/accept --override": Accept(mode=AcceptMode.OVERRIDE, reason="Hotfix verified in staging."),
    "/send-back": SendBack(feedback="The retry loop still never stops."),
    "/reopen": Reopen(reason="The approach does not scale."),
}

STATES: dict[str, WorkState | None] = {
    "none": None,
    "draft": WorkState.DRAFT,
    "open": WorkState.OPEN,
    "claimed": WorkState.CLAIMED,
    "delivered": WorkState.DELIVERED,
    "accepted": WorkState.ACCEPTED,
}

# Who a successful cell records: the first role or relation in SPEC's row the actor holds.
RECORDED: dict[str, Qualification] = {
    "requester": Role.REQUESTER,
    "task_owner": Role.TASK_OWNER,
    "runner": Role.RUNNER,
    "reviewer": Role.REVIEWER,
    "maintainer": Role.REPOSITORY_MAINTAINER,
    "release_owner": Role.RELEASE_OWNER,
    "owner": Relation.OWNER,
    "claimant": Relation.CLAIMANT,
}

REFUSALS: dict[str, RefusalCode] = {
    "NOT_A_TICKET": RefusalCode.NOT_A_TICKET,
    "ALREADY": RefusalCode.ALREADY_A_TICKET,
    "WRONG_STATE": RefusalCode.WRONG_STATE,
    "NOT_ALLOWED": RefusalCode.NOT_ALLOWED,
    "NOT_INDEPENDENT": RefusalCode.NOT_INDEPENDENT,
    "SELF_NOT_ALLOWED": RefusalCode.SELF_NOT_ALLOWED,
}

# One block per command: a row per actor, a column per state ("none" = not yet a ticket).
# A cell is either `state:who` (the WorkState after the events, and the role or relation the
# last event records) or the refusal (upper case; ALREADY is ALREADY_A_TICKET).
TABLE = """
/draft             none              draft    open     claimed  delivered  accepted
requester          draft:requester   ALREADY  ALREADY  ALREADY  ALREADY    ALREADY
task_owner         draft:task_owner  ALREADY  ALREADY  ALREADY  ALREADY    ALREADY
runner             NOT_ALLOWED       ALREADY  ALREADY  ALREADY  ALREADY    ALREADY
reviewer           NOT_ALLOWED       ALREADY  ALREADY  ALREADY  ALREADY    ALREADY
maintainer         NOT_ALLOWED       ALREADY  ALREADY  ALREADY  ALREADY    ALREADY
release_owner      NOT_ALLOWED       ALREADY  ALREADY  ALREADY  ALREADY    ALREADY
owner              NOT_ALLOWED       ALREADY  ALREADY  ALREADY  ALREADY    ALREADY
claimant           NOT_ALLOWED       ALREADY  ALREADY  ALREADY  ALREADY    ALREADY
claimant+reviewer  NOT_ALLOWED       ALREADY  ALREADY  ALREADY  ALREADY    ALREADY

/publish           none             draft            open         claimed      delivered    accepted
requester          open:requester   open:requester   WRONG_STATE  WRONG_STATE  WRONG_STATE  WRONG_STATE
task_owner         open:task_owner  open:task_owner  WRONG_STATE  WRONG_STATE  WRONG_STATE  WRONG_STATE
runner             NOT_ALLOWED      NOT_ALLOWED      WRONG_STATE  WRONG_STATE  WRONG_STATE  WRONG_STATE
reviewer           NOT_ALLOWED      NOT_ALLOWED      WRONG_STATE  WRONG_STATE  WRONG_STATE  WRONG_STATE
maintainer         NOT_ALLOWED      NOT_ALLOWED      WRONG_STATE  WRONG_STATE  WRONG_STATE  WRONG_STATE
release_owner      NOT_ALLOWED      NOT_ALLOWED      WRONG_STATE  WRONG_STATE  WRONG_STATE  WRONG_STATE
owner              NOT_ALLOWED      NOT_ALLOWED      WRONG_STATE  WRONG_STATE  WRONG_STATE  WRONG_STATE
claimant           NOT_ALLOWED      NOT_ALLOWED      WRONG_STATE  WRONG_STATE  WRONG_STATE  WRONG_STATE
claimant+reviewer  NOT_ALLOWED      NOT_ALLOWED      WRONG_STATE  WRONG_STATE  WRONG_STATE  WRONG_STATE

/claim             none          draft        open            claimed      delivered    accepted
requester          NOT_A_TICKET  WRONG_STATE  NOT_ALLOWED     WRONG_STATE  WRONG_STATE  WRONG_STATE
task_owner         NOT_A_TICKET  WRONG_STATE  NOT_ALLOWED     WRONG_STATE  WRONG_STATE  WRONG_STATE
runner             NOT_A_TICKET  WRONG_STATE  claimed:runner  WRONG_STATE  WRONG_STATE  WRONG_STATE
reviewer           NOT_A_TICKET  WRONG_STATE  NOT_ALLOWED     WRONG_STATE  WRONG_STATE  WRONG_STATE
maintainer         NOT_A_TICKET  WRONG_STATE  NOT_ALLOWED     WRONG_STATE  WRONG_STATE  WRONG_STATE
release_owner      NOT_A_TICKET  WRONG_STATE  NOT_ALLOWED     WRONG_STATE  WRONG_STATE  WRONG_STATE
owner              NOT_A_TICKET  WRONG_STATE  NOT_ALLOWED     WRONG_STATE  WRONG_STATE  WRONG_STATE
claimant           NOT_A_TICKET  WRONG_STATE  claimed:runner  WRONG_STATE  WRONG_STATE  WRONG_STATE
claimant+reviewer  NOT_A_TICKET  WRONG_STATE  claimed:runner  WRONG_STATE  WRONG_STATE  WRONG_STATE

/deliver           none          draft        open         claimed             delivered    accepted
requester          NOT_A_TICKET  WRONG_STATE  WRONG_STATE  NOT_ALLOWED         WRONG_STATE  NOT_ALLOWED
task_owner         NOT_A_TICKET  WRONG_STATE  WRONG_STATE  NOT_ALLOWED         WRONG_STATE  NOT_ALLOWED
runner             NOT_A_TICKET  WRONG_STATE  WRONG_STATE  NOT_ALLOWED         WRONG_STATE  NOT_ALLOWED
reviewer           NOT_A_TICKET  WRONG_STATE  WRONG_STATE  NOT_ALLOWED         WRONG_STATE  NOT_ALLOWED
maintainer         NOT_A_TICKET  WRONG_STATE  WRONG_STATE  NOT_ALLOWED         WRONG_STATE  NOT_ALLOWED
release_owner      NOT_A_TICKET  WRONG_STATE  WRONG_STATE  NOT_ALLOWED         WRONG_STATE  NOT_ALLOWED
owner              NOT_A_TICKET  WRONG_STATE  WRONG_STATE  NOT_ALLOWED         WRONG_STATE  NOT_ALLOWED
claimant           NOT_A_TICKET  WRONG_STATE  WRONG_STATE  delivered:claimant  WRONG_STATE  delivered:claimant
claimant+reviewer  NOT_A_TICKET  WRONG_STATE  WRONG_STATE  delivered:claimant  WRONG_STATE  delivered:claimant

/accept            none          draft        open         claimed      delivered          accepted
requester          NOT_A_TICKET  WRONG_STATE  WRONG_STATE  WRONG_STATE  NOT_ALLOWED        WRONG_STATE
task_owner         NOT_A_TICKET  WRONG_STATE  WRONG_STATE  WRONG_STATE  NOT_ALLOWED        WRONG_STATE
runner             NOT_A_TICKET  WRONG_STATE  WRONG_STATE  WRONG_STATE  NOT_ALLOWED        WRONG_STATE
reviewer           NOT_A_TICKET  WRONG_STATE  WRONG_STATE  WRONG_STATE  accepted:reviewer  WRONG_STATE
maintainer         NOT_A_TICKET  WRONG_STATE  WRONG_STATE  WRONG_STATE  NOT_ALLOWED        WRONG_STATE
release_owner      NOT_A_TICKET  WRONG_STATE  WRONG_STATE  WRONG_STATE  NOT_ALLOWED        WRONG_STATE
owner              NOT_A_TICKET  WRONG_STATE  WRONG_STATE  WRONG_STATE  NOT_ALLOWED        WRONG_STATE
claimant           NOT_A_TICKET  WRONG_STATE  WRONG_STATE  WRONG_STATE  NOT_ALLOWED        WRONG_STATE
claimant+reviewer  NOT_A_TICKET  WRONG_STATE  WRONG_STATE  WRONG_STATE  NOT_INDEPENDENT    WRONG_STATE

/accept --self     none          draft        open         claimed      delivered          accepted
requester          NOT_A_TICKET  WRONG_STATE  WRONG_STATE  WRONG_STATE  NOT_ALLOWED        WRONG_STATE
task_owner         NOT_A_TICKET  WRONG_STATE  WRONG_STATE  WRONG_STATE  NOT_ALLOWED        WRONG_STATE
runner             NOT_A_TICKET  WRONG_STATE  WRONG_STATE  WRONG_STATE  NOT_ALLOWED        WRONG_STATE
reviewer           NOT_A_TICKET  WRONG_STATE  WRONG_STATE  WRONG_STATE  SELF_NOT_ALLOWED   WRONG_STATE
maintainer         NOT_A_TICKET  WRONG_STATE  WRONG_STATE  WRONG_STATE  NOT_ALLOWED        WRONG_STATE
release_owner      NOT_A_TICKET  WRONG_STATE  WRONG_STATE  WRONG_STATE  NOT_ALLOWED        WRONG_STATE
owner              NOT_A_TICKET  WRONG_STATE  WRONG_STATE  WRONG_STATE  NOT_ALLOWED        WRONG_STATE
claimant           NOT_A_TICKET  WRONG_STATE  WRONG_STATE  WRONG_STATE  NOT_ALLOWED        WRONG_STATE
claimant+reviewer  NOT_A_TICKET  WRONG_STATE  WRONG_STATE  WRONG_STATE  accepted:reviewer  WRONG_STATE

/accept --override  none          draft        open         claimed      delivered               accepted
requester           NOT_A_TICKET  WRONG_STATE  WRONG_STATE  WRONG_STATE  NOT_ALLOWED             WRONG_STATE
task_owner          NOT_A_TICKET  WRONG_STATE  WRONG_STATE  WRONG_STATE  NOT_ALLOWED             WRONG_STATE
runner              NOT_A_TICKET  WRONG_STATE  WRONG_STATE  WRONG_STATE  NOT_ALLOWED             WRONG_STATE
reviewer            NOT_A_TICKET  WRONG_STATE  WRONG_STATE  WRONG_STATE  NOT_ALLOWED             WRONG_STATE
maintainer          NOT_A_TICKET  WRONG_STATE  WRONG_STATE  WRONG_STATE  accepted:maintainer     WRONG_STATE
release_owner       NOT_A_TICKET  WRONG_STATE  WRONG_STATE  WRONG_STATE  accepted:release_owner  WRONG_STATE
owner               NOT_A_TICKET  WRONG_STATE  WRONG_STATE  WRONG_STATE  NOT_ALLOWED             WRONG_STATE
claimant            NOT_A_TICKET  WRONG_STATE  WRONG_STATE  WRONG_STATE  NOT_ALLOWED             WRONG_STATE
claimant+reviewer   NOT_A_TICKET  WRONG_STATE  WRONG_STATE  WRONG_STATE  NOT_ALLOWED             WRONG_STATE

/send-back         none          draft        open         claimed      delivered         accepted
requester          NOT_A_TICKET  WRONG_STATE  WRONG_STATE  WRONG_STATE  NOT_ALLOWED       WRONG_STATE
task_owner         NOT_A_TICKET  WRONG_STATE  WRONG_STATE  WRONG_STATE  NOT_ALLOWED       WRONG_STATE
runner             NOT_A_TICKET  WRONG_STATE  WRONG_STATE  WRONG_STATE  NOT_ALLOWED       WRONG_STATE
reviewer           NOT_A_TICKET  WRONG_STATE  WRONG_STATE  WRONG_STATE  claimed:reviewer  WRONG_STATE
maintainer         NOT_A_TICKET  WRONG_STATE  WRONG_STATE  WRONG_STATE  NOT_ALLOWED       WRONG_STATE
release_owner      NOT_A_TICKET  WRONG_STATE  WRONG_STATE  WRONG_STATE  NOT_ALLOWED       WRONG_STATE
owner              NOT_A_TICKET  WRONG_STATE  WRONG_STATE  WRONG_STATE  NOT_ALLOWED       WRONG_STATE
claimant           NOT_A_TICKET  WRONG_STATE  WRONG_STATE  WRONG_STATE  NOT_ALLOWED       WRONG_STATE
claimant+reviewer  NOT_A_TICKET  WRONG_STATE  WRONG_STATE  WRONG_STATE  NOT_INDEPENDENT   WRONG_STATE

/reopen            none          draft        open         claimed        delivered      accepted
requester          NOT_A_TICKET  WRONG_STATE  WRONG_STATE  NOT_ALLOWED    NOT_ALLOWED    NOT_ALLOWED
task_owner         NOT_A_TICKET  WRONG_STATE  WRONG_STATE  NOT_ALLOWED    NOT_ALLOWED    NOT_ALLOWED
runner             NOT_A_TICKET  WRONG_STATE  WRONG_STATE  NOT_ALLOWED    NOT_ALLOWED    NOT_ALLOWED
reviewer           NOT_A_TICKET  WRONG_STATE  WRONG_STATE  open:reviewer  open:reviewer  NOT_ALLOWED
maintainer         NOT_A_TICKET  WRONG_STATE  WRONG_STATE  NOT_ALLOWED    NOT_ALLOWED    open:maintainer
release_owner      NOT_A_TICKET  WRONG_STATE  WRONG_STATE  NOT_ALLOWED    NOT_ALLOWED    NOT_ALLOWED
owner              NOT_A_TICKET  WRONG_STATE  WRONG_STATE  open:owner     open:owner     open:owner
claimant           NOT_A_TICKET  WRONG_STATE  WRONG_STATE  open:claimant  open:claimant  NOT_ALLOWED
claimant+reviewer  NOT_A_TICKET  WRONG_STATE  WRONG_STATE  open:reviewer  open:reviewer  NOT_ALLOWED
"""

Expected = tuple[WorkState, Qualification] | RefusalCode


def _parse_cell(cell: str) -> Expected:
    if cell in REFUSALS:
        return REFUSALS[cell]
    state, _, who = cell.partition(":")
    target = STATES[state]
    assert target is not None, cell
    return target, RECORDED[who]


def _parse_table(text: str) -> dict[tuple[str, str, str], Expected]:
    cells: dict[tuple[str, str, str], Expected] = {}
    for block in text.strip().split("\n\n"):
        header, *rows = block.splitlines()
        command, *states = re.split(r"\s{2,}", header.strip())
        assert states == list(STATES), f"{command}: columns {states}"
        for row in rows:
            actor, *outcomes = row.split()
            assert len(outcomes) == len(STATES), f"{command} / {actor}: {outcomes}"
            for state, outcome in zip(STATES, outcomes, strict=True):
                cells[command, actor, state] = _parse_cell(outcome)
    return cells


EXPECTED = _parse_table(TABLE)


# -- building tickets --------------------------------------------------------------------


def at(minute: int) -> datetime:
    """The moment `minute` minutes into the story."""
    return T0 + timedelta(minutes=minute)


def context(actor: Actor, minute: int, comment_id: int | None = None) -> Context:
    """A command in a comment created at `minute`; comment ids follow the minutes unless given."""
    return Context(
        actor=actor,
        operation_id=f"op-{minute}-{comment_id}-{actor.login}",
        at=at(minute),
        comment_id=100 + minute if comment_id is None else comment_id,
        comment_at=at(minute),
        policy_version="blob-1",
    )


def events_of(ticket: Ticket, command: Command, ctx: Context) -> tuple[Event, ...]:
    """The events a command yields; the command must not be refused."""
    decision = decide(ticket, command, ctx)
    assert not isinstance(decision, Refusal), decision
    return decision


def run(ticket: Ticket, command: Command, ctx: Context) -> Ticket:
    """The ticket after a command that must not be refused."""
    return apply_all(ticket, events_of(ticket, command, ctx))


def refusal_code(ticket: Ticket, command: Command, ctx: Context) -> RefusalCode:
    """The code of a command that must be refused."""
    decision = decide(ticket, command, ctx)
    assert isinstance(decision, Refusal), f"expected a refusal, got {decision}"
    return decision.code


FIRST_DELIVERY = Deliver(summary="First pass at stopping the retries.", commit=FIRST_COMMIT)
DELIVERY_MINUTE = 4  # the walk's /deliver comment: created at minute 4, comment id 104
WALK: tuple[tuple[Command, Actor], ...] = (
    (Draft(), OLIVIA_PUBLISHING),
    (Publish(description=DESCRIPTION), OLIVIA_PUBLISHING),
    (Claim(), CODY),
    (FIRST_DELIVERY, CODY),
    (Accept(), RITA),
)


def ticket_in(state: WorkState | None) -> Ticket:
    """A ticket walked draft -> open -> claimed -> delivered -> accepted, one step a minute."""
    ticket = Ticket(KEY)
    for minute, (command, actor) in enumerate(WALK, start=1):
        if ticket.work is state:
            break
        ticket = run(ticket, command, context(actor, minute))
    assert ticket.work is state
    return ticket


def sent_back_ticket() -> Ticket:
    """The walk's delivery, sent back by rita at minute 5."""
    return run(ticket_in(WorkState.DELIVERED), SendBack(feedback="Still retries."), context(RITA, 5))


# -- the table ---------------------------------------------------------------------------

TABLE_MINUTE = 60  # after every comment of the walk, so no decision in the table is stale


def test_the_table_has_one_cell_for_every_actor_command_and_state() -> None:
    """The written-out table covers 9 actors x 9 commands x 6 states and nothing else."""
    assert set(EXPECTED) == {(c, a, s) for c in COMMANDS for a in ACTORS for s in STATES}
    assert len(EXPECTED) == 486


@pytest.mark.parametrize(
    ("command", "actor", "state"),
    list(EXPECTED),
    ids=[f"{actor} runs {command} on {state}" for command, actor, state in EXPECTED],
)
def test_each_actor_gets_the_outcome_spec_gives_for_each_command_in_each_state(
    command: str, actor: str, state: str
) -> None:
    """A cell either reaches its state and records its role or relation, or is refused with its code."""
    ticket = ticket_in(STATES[state])
    decision = decide(ticket, COMMANDS[command], context(ACTORS[actor], TABLE_MINUTE))
    expected = EXPECTED[command, actor, state]
    if isinstance(expected, RefusalCode):
        assert isinstance(decision, Refusal), f"expected {expected}, got {decision}"
        assert decision.code is expected, decision.reason
    else:
        assert not isinstance(decision, Refusal), f"expected {expected}, got {decision}"
        target, recorded = expected
        assert apply_all(ticket, decision).work is target
        assert decision[-1].role == recorded.value
        assert decision[-1].actor == ACTORS[actor].login


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


# -- publish -----------------------------------------------------------------------------


@pytest.mark.parametrize("state", [None, WorkState.DRAFT], ids=["no-ticket", "draft"])
@pytest.mark.parametrize("description", ["", "  \n\t "], ids=["empty", "blank"])
def test_publish_needs_a_non_empty_description(state: WorkState | None, description: str) -> None:
    """An issue with an empty body cannot be published."""
    publish = Publish(description=description)
    ticket = ticket_in(state)
    assert refusal_code(ticket, publish, context(OLIVIA_PUBLISHING, 10)) is RefusalCode.MISSING_DESCRIPTION


@pytest.mark.parametrize(
    ("first_assignee", "owner"),
    [("ada", "ada"), (None, "olivia")],
    ids=["first-assignee", "publisher-without-assignee"],
)
def test_publish_makes_the_first_assignee_or_else_the_publisher_the_owner(
    first_assignee: str | None, owner: str
) -> None:
    """The owner is the first assignee at publish time, else the publisher."""
    publish = Publish(description=DESCRIPTION, first_assignee=first_assignee)
    ticket = run(Ticket(KEY), publish, context(OLIVIA_PUBLISHING, 1))
    assert ticket.work is WorkState.OPEN
    assert ticket.owner == owner


@pytest.mark.parametrize(
    ("command", "roles"),
    [
        (Claim(), {Role.RUNNER}),
        (Accept(), {Role.REVIEWER}),
        (Accept(mode=AcceptMode.OVERRIDE, reason="r"), {Role.REPOSITORY_MAINTAINER, Role.RELEASE_OWNER}),
        (Deliver(summary="s", commit="c"), {Role.RUNNER}),  # the claimant relation, backed by runner
        (Reopen(reason="r"), {Role.REVIEWER, Role.REPOSITORY_MAINTAINER}),
    ],
)
def test_only_the_roles_a_commands_rows_allow_are_worth_resolving(command: Command, roles: set[Role]) -> None:
    """Resolving these (and no others) cannot change a decision: no row asks for any other role."""
    assert roles_in_rows(command) == roles
