"""A kept API answer replayed for its Idempotency-Key: as it was, unless what it reported no
longer holds (`handlers.api.replays_an_earlier_attempt`)."""

from __future__ import annotations

import asyncio

from support.world import World
from tests.e2e.test_api import command, delivered


async def test_a_send_back_replayed_after_the_runner_gave_up_is_replayed_as_it_was(world: World) -> None:
    """docs/agents.md: only an answer that applied to an earlier attempt, or to a claim or a
    delivery a `/reopen` has released since, is not replayed as applied. rita's `/send-back`
    applied to attempt 2 (the ticket claimed again); cody then gives the work up (`/reopen`: open,
    still attempt 2). rita's client retries its send-back with the same key (its first answer
    was lost): the send-back did apply to this very attempt, so it is replayed as it was (a
    review found it answered 409 `earlier_attempt` because its kept status read `claimed`)."""
    await delivered(world)
    await asyncio.sleep(1.1)  # the review comes after the delivery, to the second
    first = await command(world, "rita", "/send-back The upload still restarts from zero.", key="sb-12")
    assert first[0] == 200 and first[1]["applied"] is True and first[1]["status"]["attempt"] == 2
    await world.say("cody", "/reopen Giving this up: the storage team owns the uploader.")
    assert world.ticket().work.value == "open" and world.ticket().attempt == 2
    again = await command(world, "rita", "/send-back The upload still restarts from zero.", key="sb-12")
    assert again[0] == 200 and again[1] == first[1], again
