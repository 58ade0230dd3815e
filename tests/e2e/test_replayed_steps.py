"""A delivery retried after its command committed (SPEC *Durability and idempotency*: a
transient failure is retried; a replayed command changes nothing): what the first run was to do
after its commit must still be done by the retry."""

from __future__ import annotations

from app.store.queue_admin import list_deliveries
from github_standin import Fault
from support.world import REPO, World, pull_request_payload
from tests.e2e.test_rails_events import LATER, MERGE, deployment, deployment_state


async def test_a_publish_that_tells_a_held_merge_checks_the_deployments_even_when_its_compare_failed_once(
    world: World,
) -> None:
    """PR #50 (`Fixes #12`) merges before #12 is published, and production deploys a commit that
    contains the merge: both are held. rachel publishes #12: the merge is recorded and production's
    deployment is checked again (a compare), but GitHub answers that compare 502 once. The
    delivery is retried; once settled, #12 is deployed, as it is when the compare answers at once."""
    world.github.repositories[REPO].compare[(MERGE, LATER)] = "ahead"
    closed = pull_request_payload("closed", 50, "Fixes #12", merged=True, state="closed")
    await world.send("pull_request", closed)
    await world.send(*deployment(900, LATER, "success", 1))
    assert world.ticket() is None
    world.github.inject("GET", rf"/repos/{REPO}/compare/", Fault(status=502))
    await world.say("rachel", "/publish")
    assert [d for d in list_deliveries(world.database, limit=100) if d["status"] == "failed"] == []
    assert world.ticket().rails.integration.value == "merged"
    assert deployment_state(world) == "deployed"
