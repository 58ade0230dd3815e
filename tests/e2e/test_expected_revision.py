"""`rev=N` end to end (SPEC: "Agent interface"): signed comment webhooks into the real server,
GitHub the stand-in; a stale revision is refused naming the current one, the current one applies."""

from __future__ import annotations

from support.world import World


async def test_a_stale_rev_is_refused_naming_the_current_revision_and_the_current_one_applies(
    world: World,
) -> None:
    """`/accept rev=<old>` changes nothing and its reply names the revision; `/accept rev=<now>` accepts."""
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    await world.say("cody", "/deliver branch=agent/12-fix\nUploads now resume after a dropped connection.")
    now = world.ticket().revision
    stale = await world.say("rita", f"/accept rev={now - 1}")
    assert world.ticket().work.value == "delivered" and world.ticket().revision == now
    [reply] = world.replies()
    assert f"it is now at revision {now}" in reply and f"`/accept rev={now}`" in reply
    assert world.reactions_to(stale) == []
    await world.say("rita", f"/accept rev={now}")
    assert world.ticket().work.value == "accepted" and len(world.replies()) == 1
