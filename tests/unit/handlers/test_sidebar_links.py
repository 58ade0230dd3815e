"""PRs linked from an issue's Development sidebar (GraphQL `closingIssuesReferences`) count as links."""

from __future__ import annotations

import pytest

from handlers.errors import Missing, TransientError
from handlers.resync import resync
from policies.states import IntegrationState
from tests.fakes.github import pull_answer
from tests.fakes.webhooks import INSTALLATION, REPOSITORY, pull_request
from tests.unit.handlers.steps import KEY, published, ticket, world

MERGE = "e" * 40


async def test_a_pull_request_linked_from_the_sidebar_links_the_ticket() -> None:
    """No keyword in the body: GitHub's closing references name #12, so the PR links the ticket."""
    ports = world()
    await published(ports)
    ports.github.link_from_sidebar(REPOSITORY, 40, 12)
    await ports.dispatch("pull_request", pull_request("opened", pull_answer(REPOSITORY, 40, body="Retries.")))
    rails = ticket(ports).rails
    assert rails.pull_requests[40].linked and rails.integration is IntegrationState.PULL_REQUEST_OPEN


async def test_sidebar_links_are_read_on_edited_and_stand_until_the_next_read() -> None:
    """A link made in the sidebar shows at the next `edited`; a `labeled` event (no read) keeps it."""
    ports = world()
    await published(ports)
    pull = pull_answer(REPOSITORY, 40, body="Retries.")
    await ports.dispatch("pull_request", pull_request("opened", pull))
    assert 40 not in ticket(ports).rails.pull_requests  # an unlinked PR tells the ticket nothing
    ports.github.link_from_sidebar(REPOSITORY, 40, 12)
    await ports.dispatch("pull_request", pull_request("edited", pull), delivery_id="d2")
    assert ticket(ports).rails.pull_requests[40].linked
    reads = len([c for c in ports.github.calls if c.method == "closing_issues"])
    await ports.dispatch("pull_request", pull_request("labeled", pull), delivery_id="d3")
    assert ticket(ports).rails.pull_requests[40].linked
    assert len([c for c in ports.github.calls if c.method == "closing_issues"]) == reads


async def test_a_sidebar_link_counts_at_the_merge_like_fixes_in_the_body() -> None:
    """A merged PR whose sidebar names the ticket merges the ticket."""
    ports = world()
    await published(ports)
    ports.github.link_from_sidebar(REPOSITORY, 40, 12)
    pull = pull_answer(
        REPOSITORY, 40, body="Retries.", state="closed", merged_at="2026-11-30T10:30:00Z",
        merge_commit=MERGE, updated_at="2026-11-30T10:30:00Z",
    )  # fmt: skip
    await ports.dispatch("pull_request", pull_request("closed", pull))
    rails = ticket(ports).rails
    assert rails.integration is IntegrationState.MERGED and rails.merge_commit == MERGE


async def test_a_transient_graphql_failure_retries_the_delivery_and_loses_no_body_link() -> None:
    """GraphQL down: the delivery fails transiently before recording anything; its retry links both."""
    ports = world()
    await published(ports)
    ports.github.link_from_sidebar(REPOSITORY, 40, 13)
    ports.github.closing_faults.append(TransientError("graphql: GitHub answered 502"))
    payload = pull_request("opened", pull_answer(REPOSITORY, 40, body="Fixes #12"))
    with pytest.raises(TransientError):
        await ports.dispatch("pull_request", payload)
    assert 40 not in ticket(ports).rails.pull_requests
    await ports.dispatch("pull_request", payload)  # the worker's retry
    assert ticket(ports).rails.pull_requests[40].linked


async def test_a_pull_request_graphql_does_not_know_links_by_its_body_only() -> None:
    """GitHub's GraphQL answering "not found" for the PR: no sidebar links, the body's still count."""
    ports = world()
    await published(ports)
    ports.github.closing_faults.append(Missing("pull request acme/app#40"))
    await ports.dispatch(
        "pull_request", pull_request("opened", pull_answer(REPOSITORY, 40, body="Fixes #12"))
    )
    assert ticket(ports).rails.pull_requests[40].linked


async def test_resync_keeps_a_sidebar_link() -> None:
    """`railyard resync` reads the sidebar too: a PR linked only there stays linked and merges the ticket."""
    ports = world()
    ports.github.installations[REPOSITORY] = INSTALLATION
    await published(ports)
    ports.github.link_from_sidebar(REPOSITORY, 40, 12)
    await ports.dispatch("pull_request", pull_request("opened", pull_answer(REPOSITORY, 40, body="Retries.")))
    merged = pull_answer(
        REPOSITORY, 40, body="Retries.", state="closed", merged_at="2026-11-30T10:30:00Z",
        merge_commit=MERGE, updated_at="2026-11-30T10:30:00Z",
    )  # fmt: skip
    ports.github.add_pull(REPOSITORY, merged)
    await resync(ports.services, KEY)
    rails = ticket(ports).rails
    assert rails.pull_requests[40].linked and rails.integration is IntegrationState.MERGED
