"""`/reopen` end to end: the previous claimant unassigned on GitHub (the stand-in) and told why
in one reply, once, however often the request is replayed or GitHub's answer is lost."""

from __future__ import annotations

from github_standin import Fault
from support.world import REPO, World
from tests.e2e.test_api import command, delivered


async def test_a_reopen_through_the_api_unassigns_and_tells_the_claimant_once(world: World) -> None:
    """rita reopens cody's delivery through the API, then sends the same request again: cody is
    unassigned by one DELETE and mentioned with the reason in one reply."""
    await delivered(world)
    await world.settle()
    assert "cody" in world.github.repository(REPO).issues[12].assignees  # type: ignore[union-attr]
    for _ in range(2):
        status, _, _ = await command(world, "rita", "/reopen Wrong approach", key="reopen-1")
        assert status == 200
        await world.settle()
    assert "cody" not in world.github.repository(REPO).issues[12].assignees  # type: ignore[union-attr]
    assert len(world.github.calls_to("DELETE", f"/repos/{REPO}/issues/12/assignees")) == 1
    [note] = world.replies()
    assert note.startswith("@cody: @rita reopened") and "Wrong approach" in note


async def test_when_github_acts_but_its_answers_are_lost_the_claimant_is_told_once(world: World) -> None:
    """GitHub performs the unassignment and the reply but answers 502 to both: the outbox tries
    again, finds its reply by its marker, and cody ends up unassigned with exactly one reply."""
    await delivered(world)
    await world.settle()
    world.github.inject("DELETE", r"/issues/12/assignees$", Fault(status=502, apply_then_fail=True))
    world.github.inject("POST", r"/issues/12/comments$", Fault(status=502, apply_then_fail=True))
    await world.say("rita", "/reopen Wrong approach")
    assert "cody" not in world.github.repository(REPO).issues[12].assignees  # type: ignore[union-attr]
    assert len(world.github.calls_to("DELETE", f"/repos/{REPO}/issues/12/assignees")) == 2
    [note] = world.replies()
    assert note.startswith("@cody: @rita reopened")
