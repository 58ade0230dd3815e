"""What a deployment status costs, through the real server: tickets already deployed are
checked against a newer deployment through the commit that deployed them, not one by one."""

from __future__ import annotations

from tests.e2e.test_rails_events import LATER, OLDER, deployment, merged
from tests.e2e.world import REPO, World, pull_request_payload

NEWER = "e2" * 20
SECOND_MERGE = "5" * 40


def compares(world: World) -> int:
    """Compare calls GitHub has received so far."""
    return len(world.github.calls_to("GET", f"/repos/{REPO}/compare/"))


async def two_merged_tickets(world: World) -> None:
    """#12 and #13 merged (merge commits ddd... and 555...), both contained in LATER."""
    world.github.repositories[REPO].issues[13].body = "Second ticket"
    await world.say("rachel", "/publish", number=13)
    await world.say("cody", "/claim", number=13)
    await merged(world)
    second = pull_request_payload(
        "closed", 51, "Fixes #13", merged=True, state="closed", ref="agent/13", head="b" * 40
    )
    second["pull_request"]["merge_commit_sha"] = SECOND_MERGE
    await world.send("pull_request", second)
    world.github.repositories[REPO].compare.update(
        {(SECOND_MERGE, LATER): "ahead", (SECOND_MERGE, OLDER): "behind", (LATER, NEWER): "ahead"}
    )


def states(world: World) -> tuple[str, str]:
    """The headline deployment rail of #12 and #13."""
    return world.ticket(12).rails.deployment.value, world.ticket(13).rails.deployment.value


async def test_a_newer_deployment_costs_one_compare_for_every_ticket_deployed_before(world: World) -> None:
    """Once LATER deployed both tickets, NEWER (a descendant of LATER) deploys both after one
    compare, LATER...NEWER; the merges are never compared with NEWER."""
    await two_merged_tickets(world)
    await world.send(*deployment(900, LATER, "success", 1))
    assert states(world) == ("deployed", "deployed")
    before = compares(world)
    await world.send(*deployment(901, NEWER, "in_progress", 2))
    await world.send(*deployment(901, NEWER, "success", 3))
    assert states(world) == ("deployed", "deployed")
    assert compares(world) - before == 1


async def test_a_rollback_still_compares_each_deployed_ticket(world: World) -> None:
    """A deployment that does not contain the anchor (a rollback) is checked ticket by ticket."""
    await two_merged_tickets(world)
    world.github.repositories[REPO].compare[(LATER, OLDER)] = "behind"
    await world.send(*deployment(900, LATER, "success", 1))
    await world.send(*deployment(901, OLDER, "success", 2))
    assert states(world) == ("not_deployed", "not_deployed")
