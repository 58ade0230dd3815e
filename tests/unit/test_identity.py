"""Accounts, not logins: relations are held by user ids, backed by roles when they act.

SPEC's *Identity*: every actor and relation stores the account id; comparisons use the id;
screens show the current login; `/deliver` needs the claimant to hold runner now; comments
on pull requests never create tickets. Relations recorded before ids were stored adopt the id
of their first matching event.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from policies.commands import Accept, Claim, Command, Context, Deliver, Draft, Publish, Reopen
from policies.engine import apply_all, decide
from policies.model import Actor, Ticket, TicketKey
from policies.refusals import Refusal, RefusalCode
from policies.states import Role, WorkState

KEY = TicketKey("acme/rockets", 61)
T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)

OLIVIA = Actor("olivia", frozenset({Role.REQUESTER}), id=1001)
CODY = Actor("cody", frozenset({Role.RUNNER}), id=1002)
RITA = Actor("rita", frozenset({Role.REVIEWER}), id=1003)
# Someone else who registered "olivia" after the owner renamed her account.
IMPOSTOR = Actor("olivia", frozenset(), id=6666)


def ctx(actor: Actor, minute: int, **changes: object) -> Context:
    """A command by `actor`, `minute` minutes into the story, its comment id rising with time."""
    at = T0 + timedelta(minutes=minute)
    base = Context(actor=actor, operation_id=f"op-{minute}", at=at, comment_id=100 + minute, comment_at=at)
    return replace(base, **changes)  # type: ignore[arg-type]


def run(ticket: Ticket, command: Command, context: Context) -> Ticket:
    """Apply an allowed command; fail loudly on a refusal."""
    decision = decide(ticket, command, context)
    assert not isinstance(decision, Refusal), decision.reason
    return apply_all(ticket, decision)


def refused(ticket: Ticket, command: Command, context: Context) -> Refusal:
    """The refusal a command gets."""
    decision = decide(ticket, command, context)
    assert isinstance(decision, Refusal), f"expected a refusal, got {decision}"
    return decision


def accepted_ticket() -> Ticket:
    """Olivia published and owns it, Cody delivered, Rita accepted."""
    ticket = run(Ticket(KEY), Publish(description="Fix the uploader."), ctx(OLIVIA, 0))
    ticket = run(ticket, Claim(), ctx(CODY, 1))
    ticket = run(ticket, Deliver(summary="Fixed.", commit="c0ffee1"), ctx(CODY, 2))
    return run(ticket, Accept(), ctx(RITA, 3))


def test_relations_store_account_ids() -> None:
    """The owner, claimant, delivery's runner and reviewer are recorded with their user ids."""
    ticket = accepted_ticket()
    assert (ticket.owner_id, ticket.claimant_id) == (1001, 1002)
    assert ticket.last_delivery is not None and ticket.last_delivery.runner_id == 1002
    assert ticket.review is not None and ticket.review.reviewer_id == 1003


def test_every_event_records_the_actors_account_id() -> None:
    """Events carry the actor's id beside the login it had then."""
    decision = decide(Ticket(KEY), Publish(description="d"), ctx(OLIVIA, 0))
    assert not isinstance(decision, Refusal)
    assert {(e.actor, e.actor_id) for e in decision} == {("olivia", 1001)}


def test_another_account_with_the_owners_freed_login_cannot_reopen_as_owner() -> None:
    """Same login, different id: not the owner, so `/reopen` of an accepted ticket is refused."""
    refusal = refused(accepted_ticket(), Reopen(reason="mine now"), ctx(IMPOSTOR, 4))
    assert refusal.code is RefusalCode.NOT_ALLOWED


def test_a_renamed_owner_keeps_the_relation_and_shows_the_new_login() -> None:
    """The owner's account under a new login may still reopen; the ticket shows the new login."""
    renamed = Actor("olivia-renamed", frozenset(), id=1001)
    ticket = run(accepted_ticket(), Reopen(reason="Regressed in 2.1."), ctx(renamed, 4))
    assert ticket.work is WorkState.OPEN
    assert (ticket.owner, ticket.owner_id) == ("olivia-renamed", 1001)


def test_another_account_with_the_runners_login_is_independent_of_the_delivery() -> None:
    """Independence compares accounts: the runner renamed still cannot review their own delivery."""
    ticket = run(accepted_ticket(), Deliver(summary="More.", commit="c0ffee2"), ctx(CODY, 5))
    cody_renamed = Actor("cody2", frozenset({Role.REVIEWER}), id=1002)
    assert refused(ticket, Accept(), ctx(cody_renamed, 6)).code is RefusalCode.NOT_INDEPENDENT
    other_cody = Actor("cody", frozenset({Role.REVIEWER}), id=7777)
    assert run(ticket, Accept(), ctx(other_cody, 6)).work is WorkState.ACCEPTED


def test_an_impostor_claimant_login_cannot_deliver() -> None:
    """A runner account that took the claimant's old login is not the claimant."""
    ticket = run(Ticket(KEY), Publish(description="d"), ctx(OLIVIA, 0))
    ticket = run(ticket, Claim(), ctx(CODY, 1))
    impostor = Actor("cody", frozenset({Role.RUNNER}), id=8888)
    refusal = refused(ticket, Deliver(summary="Mine.", commit="c0ffee1"), ctx(impostor, 2))
    assert refusal.code is RefusalCode.NOT_ALLOWED


def test_a_claimant_removed_from_the_runners_cannot_deliver() -> None:
    """The claimant relation needs the runner role when `/deliver` executes."""
    ticket = run(Ticket(KEY), Publish(description="d"), ctx(OLIVIA, 0))
    ticket = run(ticket, Claim(), ctx(CODY, 1))
    cody_removed = replace(CODY, roles=frozenset())
    refusal = refused(ticket, Deliver(summary="Done.", commit="c0ffee1"), ctx(cody_removed, 2))
    assert refusal.code is RefusalCode.NOT_ALLOWED
    assert "no longer holds runner" in refusal.reason


def test_a_claimant_removed_from_the_runners_cannot_turn_accepted_back_into_delivered() -> None:
    """After acceptance, a claimant without runner cannot deliver again."""
    cody_removed = replace(CODY, roles=frozenset())
    deliver = Deliver(summary="One more thing.", commit="c0ffee9")
    assert refused(accepted_ticket(), deliver, ctx(cody_removed, 4)).code is RefusalCode.NOT_ALLOWED


def test_a_claimant_removed_from_the_runners_may_still_give_the_work_up() -> None:
    """`/reopen` by the claimant (releasing the claim) needs no role."""
    ticket = run(Ticket(KEY), Publish(description="d"), ctx(OLIVIA, 0))
    ticket = run(ticket, Claim(), ctx(CODY, 1))
    ticket = run(ticket, Reopen(reason="Moved to another team."), ctx(replace(CODY, roles=frozenset()), 2))
    assert ticket.work is WorkState.OPEN
    assert ticket.claimant is None and ticket.claimant_id is None


def test_publish_on_a_pull_request_never_creates_a_ticket() -> None:
    """`/publish` or `/draft` in a PR comment is refused when the linked issue is not a ticket."""
    for command in (Publish(description="d"), Draft()):
        refusal = refused(Ticket(KEY), command, ctx(OLIVIA, 0, on_pull_request=True))
        assert refusal.code is RefusalCode.NOT_A_TICKET
        assert "pull requests never create tickets" in refusal.reason


def test_publish_on_a_pull_request_may_open_an_existing_draft() -> None:
    """A draft ticket already exists, so publishing it from its PR creates nothing new."""
    draft = run(Ticket(KEY), Draft(), ctx(OLIVIA, 0))
    assert run(draft, Publish(description="d"), ctx(OLIVIA, 1, on_pull_request=True)).work is WorkState.OPEN


def test_a_relation_recorded_without_an_id_adopts_the_id_of_its_first_matching_event() -> None:
    """Old records match by login once; from then on only the adopted id counts."""
    legacy = replace(accepted_ticket(), owner_id=None)  # as migrated from before ids were stored
    ticket = run(legacy, Reopen(reason="Regressed."), ctx(OLIVIA, 4))
    assert ticket.owner_id == 1001
    ticket = run(ticket, Claim(), ctx(CODY, 5))
    ticket = run(ticket, Deliver(summary="Again.", commit="c0ffee3"), ctx(CODY, 6))
    ticket = run(ticket, Accept(), ctx(RITA, 7))
    assert refused(ticket, Reopen(reason="x"), ctx(IMPOSTOR, 8)).code is RefusalCode.NOT_ALLOWED


def test_a_renamed_runner_of_a_delivery_recorded_without_an_id_is_still_its_runner() -> None:
    """A delivery from before ids has no runner id: the claimant's id still makes its renamed runner
    the runner, so their `/accept` is refused as not independent."""
    ticket = run(Ticket(KEY), Publish(description="d"), ctx(OLIVIA, 0))
    ticket = run(ticket, Claim(), ctx(CODY, 1))
    ticket = run(ticket, Deliver(summary="Fixed.", commit="c0ffee1"), ctx(CODY, 2))
    assert ticket.last_delivery is not None
    legacy = replace(ticket, last_delivery=replace(ticket.last_delivery, runner_id=None))
    cody_renamed = Actor("cody-renamed", frozenset({Role.REVIEWER}), id=1002)
    assert refused(legacy, Accept(), ctx(cody_renamed, 3)).code is RefusalCode.NOT_INDEPENDENT


def test_an_actor_without_an_id_never_matches_a_relation_recorded_with_one() -> None:
    """Only a record from before ids falls back to the login; an id-less actor is nobody's owner."""
    no_id = Actor("olivia", frozenset())
    assert refused(accepted_ticket(), Reopen(reason="x"), ctx(no_id, 4)).code is RefusalCode.NOT_ALLOWED
