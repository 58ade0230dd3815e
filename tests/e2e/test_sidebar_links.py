"""PRs linked from an issue's Development sidebar, through the real server and the stand-in's
GraphQL endpoint: they link like `Fixes #N`, only within the repository, and a GraphQL outage
delays the link instead of losing it."""

from __future__ import annotations

from github_standin import Fault
from support.world import REPO, World, pull_request_payload

HEAD = "c" * 40


async def opened_with_sidebar_links(world: World, *links: int | str) -> None:
    """#12 and #14 published; PR #36 (no keyword in its body) linked from the sidebar, opened."""
    await world.say("rachel", "/publish")
    world.github.add_issue(REPO, 14, body="Retry uploads")
    await world.say("rachel", "/publish", number=14)
    world.github.add_pull(
        REPO, 36, body="Retries", head_ref="feature/retries", head_sha=HEAD, closing_issues=list(links)
    )
    payload = pull_request_payload("opened", 36, "Retries", head=HEAD, ref="feature/retries")
    await world.send("pull_request", payload)


def linked(world: World, number: int) -> bool:
    """Whether PR #36 links the ticket."""
    pull = world.ticket(number).rails.pull_requests.get(36)
    return pull is not None and pull.linked


async def test_a_sidebar_link_links_the_ticket_and_gets_its_check(world: World) -> None:
    """#14 linked from its sidebar: PR #36 links it (and its check names it); #12 stays unlinked."""
    await opened_with_sidebar_links(world, 14)
    assert linked(world, 14) and not linked(world, 12)
    assert world.github.calls_to("POST", "/graphql")
    [run] = [r for r in world.github.check_runs.values() if r.head_sha == HEAD and r.name == "railyard"]
    assert "#14" in run.output["summary"] or "#14" in run.output["title"]


async def test_a_sidebar_link_to_another_repository_links_nothing_here(world: World) -> None:
    """acme/other#12 in the sidebar is not acme/web#12."""
    await opened_with_sidebar_links(world, "acme/other#12")
    assert not linked(world, 12)


async def test_a_graphql_outage_retries_the_delivery_and_then_links_body_and_sidebar(world: World) -> None:
    """GraphQL answers 502 twice: the delivery is retried, then the body's and the sidebar's links count."""
    await world.say("rachel", "/publish")
    world.github.add_issue(REPO, 14, body="Retry uploads")
    await world.say("rachel", "/publish", number=14)
    world.github.add_pull(
        REPO, 36, body="Fixes #12", head_ref="feature/retries", head_sha=HEAD, closing_issues=[14]
    )
    world.github.inject("POST", r"^/graphql$", Fault(status=502), Fault(status=502))
    await world.send(
        "pull_request", pull_request_payload("opened", 36, "Fixes #12", head=HEAD, ref="feature/retries")
    )
    assert linked(world, 12) and linked(world, 14)
    assert [c.status for c in world.github.calls_to("POST", "/graphql")] == [502, 502, 200]
