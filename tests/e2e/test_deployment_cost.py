"""What a deployment status costs, through the real server: tickets already deployed are
checked against a newer deployment through the commit that deployed them, not one by one."""

from __future__ import annotations

from support.world import REPO, World
from tests.e2e.test_rails_events import LATER, OLDER, both, deployment, two_merged_tickets

NEWER = "e2" * 20


def compares(world: World) -> int:
    """Compare calls GitHub has received so far."""
    return len(world.github.calls_to("GET", f"/repos/{REPO}/compare/"))


async def test_a_newer_deployment_costs_one_compare_for_every_ticket_deployed_before(world: World) -> None:
    """Once LATER deployed both tickets, NEWER (a descendant of LATER) deploys both after one
    compare, LATER...NEWER; the merges are never compared with NEWER."""
    await two_merged_tickets(world)
    world.github.repositories[REPO].compare[(LATER, NEWER)] = "ahead"
    await world.send(*deployment(900, LATER, "success", 1))
    assert both(world) == ("deployed", "deployed")
    before = compares(world)
    await world.send(*deployment(901, NEWER, "in_progress", 2))
    await world.send(*deployment(901, NEWER, "success", 3))
    assert both(world) == ("deployed", "deployed")
    assert compares(world) - before == 1


async def test_a_rollback_still_compares_each_deployed_ticket(world: World) -> None:
    """A deployment that does not contain the anchor (a rollback) is checked ticket by ticket."""
    await two_merged_tickets(world)
    world.github.repositories[REPO].compare[(LATER, OLDER)] = "behind"
    await world.send(*deployment(900, LATER, "success", 1))
    await world.send(*deployment(901, OLDER, "success", 2))
    assert both(world) == ("not_deployed", "not_deployed")
