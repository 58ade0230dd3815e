"""What the work rail's tests share: the walk's people and commands, and tickets built by walking it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from policies.commands import Accept, Claim, Command, Context, Deliver, Draft, Publish, SendBack
from policies.engine import apply_all, decide
from policies.events import Event
from policies.model import Actor, Ticket, TicketKey
from policies.refusals import Refusal, RefusalCode
from policies.states import Role, WorkState

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
