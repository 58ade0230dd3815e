"""Stale decisions across two clocks, end to end: a delivery through the HTTP API (railyard's
time, to the microsecond) and an `/accept` comment (GitHub's `created_at`, whole seconds)."""

from __future__ import annotations

from datetime import datetime, timedelta

from app.store.tickets import TicketService
from policies.events import EventType
from policies.model import TicketKey
from support.world import REPO, World
from tests.e2e.test_api import delivered

KEY = TicketKey(REPO, 12)


def delivered_at(world: World) -> datetime:
    """When the API delivery was recorded, as railyard stored it."""
    [delivery] = [
        r.event for r in TicketService(world.database).history(KEY) if r.event.type is EventType.DELIVERED
    ]
    return datetime.fromisoformat(str(delivery.data["comment_at"]))


async def test_an_accept_written_in_the_same_second_as_an_api_delivery_is_accepted(world: World) -> None:
    """cody delivers through the API; rita's `/accept`, stamped by GitHub with that same whole second,
    is an acceptance, not a stale decision (it was refused as stale before)."""
    await delivered(world)
    second = delivered_at(world).replace(microsecond=0)

    await world.say("rita", "/accept", created_at=second.strftime("%Y-%m-%dT%H:%M:%SZ"))

    assert world.ticket().work.value == "accepted"


async def test_an_accept_written_a_second_before_an_api_delivery_is_stale(world: World) -> None:
    """The other direction: an `/accept` GitHub stamps with an earlier second looked at older work."""
    await delivered(world)
    earlier = delivered_at(world).replace(microsecond=0) - timedelta(seconds=1)

    await world.say("rita", "/accept", created_at=earlier.strftime("%Y-%m-%dT%H:%M:%SZ"))

    assert world.ticket().work.value == "delivered"
    assert any("written before attempt 1's delivery" in reply for reply in world.replies())
