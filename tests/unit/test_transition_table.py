"""The work rail as a table: every actor x every state-changing command x every state.

The expected outcome of each cell is written out below from SPEC's command table ("Commands"
and "Roles and configuration"), not derived from `policies.transitions`, so the engine is
checked against the specification rather than against itself. The guards SPEC names beside
the table have focused tests in test_transition_reviews, _deliveries and _publish.
"""

from __future__ import annotations

import re

import pytest

from policies.commands import Accept, AcceptMode, Claim, Command, Deliver, Draft, Publish, Reopen, SendBack
from policies.engine import apply_all, decide
from policies.refusals import Refusal, RefusalCode
from policies.states import Qualification, Relation, Role, WorkState
from tests.unit.work_walk import ACTORS, DESCRIPTION, SECOND_COMMIT, context, ticket_in

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
claimant+reviewer  NOT_A_TICKET  WRONG_STATE  WRONG_STATE  open:claimant  open:claimant  NOT_ALLOWED
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
