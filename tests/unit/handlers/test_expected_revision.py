"""`rev=N` on a command (SPEC: "Agent interface"), through the handlers and the in-memory fakes."""

from __future__ import annotations

from handlers.answers import Refused, Reply
from policies.refusals import RefusalCode
from policies.states import WorkState
from tests.fakes.webhooks import REPOSITORY
from tests.unit.handlers.steps import CAROL, KEY, answers_after, claimed, published, say, ticket, world


async def test_a_command_at_the_current_revision_applies() -> None:
    """`/claim rev=N` with the ticket at revision N claims it."""
    ports = world()
    at = (await published(ports)).revision
    await say(ports, f"/claim rev={at}", by=CAROL)
    assert ticket(ports).work is WorkState.CLAIMED


async def test_a_command_at_an_old_revision_is_refused_naming_the_current_one() -> None:
    """`/claim rev=N` with the ticket past N changes nothing; the one reply names the current
    revision and the command line that would run now."""
    ports = world()
    at = (await published(ports)).revision
    history, before = len(ports.store.history(KEY)), len(ports.store.answers)
    await say(ports, f"/claim rev={at - 1}", by=CAROL)
    [reply] = answers_after(ports, before)
    assert isinstance(reply, Reply) and isinstance(reply.message, Refused)
    assert reply.message.refusal.code is RefusalCode.STALE_REVISION
    assert f"now at revision {at}" in reply.message.refusal.reason
    assert reply.message.retry == f"/claim rev={at}"
    assert ticket(ports).work is WorkState.OPEN
    assert len(ports.store.history(KEY)) == history


async def test_a_redelivered_stale_command_stays_refused_once_the_revision_comes_round() -> None:
    """A stale `/deliver rev=N` redelivered after the ticket reaches revision N (claimed by the
    same runner, so it would now be valid) is replayed as refused: not applied, not answered again."""
    reference = world()
    claimed_at = (await claimed(reference)).revision
    ports = world()
    await published(ports)
    ports.github.add_branch(REPOSITORY, "agent/12-fix", "b" * 40)
    body = f"/deliver rev={claimed_at} branch=agent/12-fix Fixed the retries."
    comment_id = await say(ports, body, by=CAROL)
    await say(ports, "/claim", by=CAROL)
    assert ticket(ports).revision == claimed_at
    before = len(ports.store.answers)
    await say(ports, body, by=CAROL, comment_id=comment_id)  # GitHub delivers it again
    assert ticket(ports).work is WorkState.CLAIMED
    assert answers_after(ports, before) == []
