"""`GitHubClient.graphql` and the closing-issues read, against the GitHub stand-in's GraphQL
endpoint and, for answers the stand-in does not give, respx."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
import respx

from app.github.client import GitHubClient, GitHubError, GitHubUnavailable, RateLimited
from app.github.reads import CLOSING_ISSUES, GitHubReadsAdapter
from github_standin import Fault, StandinState
from handlers.errors import Missing
from tests.fakes import GITHUB_API, StillClock, started_client, token_route
from tests.integration.standin_reads import reads_over

REPO = "acme/web"


@pytest.fixture
async def standin() -> AsyncIterator[tuple[GitHubReadsAdapter, StandinState]]:
    """The reads adapter over a client talking to the stand-in: acme/web with PR #36."""
    state = StandinState()
    state.add_installation(7, "acme")
    state.add_repository(REPO)
    state.add_pull(REPO, 36, body="Fixes #12", closing_issues=[14, "acme/other#3"])
    async with reads_over(state) as reads:
        yield reads, state


async def test_closing_issues_are_the_body_keywords_and_the_sidebar_links_of_this_repository(
    standin: tuple[GitHubReadsAdapter, StandinState],
) -> None:
    """`Fixes #12` and a sidebar link to #14 are answered; acme/other#3 is another repository's."""
    reads, state = standin
    assert await reads.closing_issues(7, REPO, 36) == {12, 14}
    [call] = state.calls_to("POST", "/graphql")
    assert call.status == 200 and call.body["variables"] == {"owner": "acme", "name": "web", "number": 36}


async def test_an_unknown_pull_request_is_missing(standin: tuple[GitHubReadsAdapter, StandinState]) -> None:
    """GitHub answers 200 with a NOT_FOUND error for a PR it does not have: `Missing`."""
    reads, _ = standin
    with pytest.raises(Missing):
        await reads.closing_issues(7, REPO, 999)


async def test_a_graphql_5xx_is_transient(standin: tuple[GitHubReadsAdapter, StandinState]) -> None:
    """A 502 from /graphql is `GitHubUnavailable` (the worker retries the delivery)."""
    reads, state = standin
    state.inject("POST", r"^/graphql$", Fault(status=502))
    with pytest.raises(GitHubUnavailable):
        await reads.closing_issues(7, REPO, 36)


@pytest.fixture
async def client() -> AsyncIterator[GitHubClient]:
    """A started client pointed at respx's GitHub."""
    async with started_client(clock=StillClock()) as github:
        yield github


@respx.mock
async def test_a_rate_limited_graphql_answer_pauses_the_installation(client: GitHubClient) -> None:
    """A 200 carrying a RATE_LIMITED error raises `RateLimited` and holds the installation's next calls."""
    token_route()
    errors = [{"type": "RATE_LIMITED", "message": "API rate limit exceeded"}]
    route = respx.post(f"{GITHUB_API}/graphql").mock(
        return_value=httpx.Response(200, json={"errors": errors})
    )
    with pytest.raises(RateLimited):
        await client.graphql(7, CLOSING_ISSUES, {"owner": "acme", "name": "web", "number": 1})
    with pytest.raises(RateLimited):
        await client.call("get_pull", 7, repository=REPO, number=1)
    assert route.call_count == 1


@respx.mock
async def test_a_rate_limited_graphql_answer_waits_until_githubs_reset(client: GitHubClient) -> None:
    """GitHub's GraphQL budget spent: a 200 with RATE_LIMITED, `x-ratelimit-remaining: 0` and
    `x-ratelimit-reset` 50 minutes away: the installation waits until that reset, not a minute."""
    token_route()
    reset = int(StillClock()()) + 3000
    errors = [{"type": "RATE_LIMITED", "message": "API rate limit exceeded for installation ID 7."}]
    headers = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)}
    respx.post(f"{GITHUB_API}/graphql").mock(
        return_value=httpx.Response(200, json={"data": None, "errors": errors}, headers=headers)
    )
    with pytest.raises(RateLimited) as raised:
        await client.graphql(7, CLOSING_ISSUES, {"owner": "acme", "name": "web", "number": 1})
    assert raised.value.retry_at == reset


@respx.mock
async def test_another_graphql_error_loses_only_the_sidebar_links(client: GitHubClient) -> None:
    """FORBIDDEN is a `GitHubError` from the client, and no sidebar links (not a failure) from the read."""
    token_route()
    errors = [{"type": "FORBIDDEN", "message": "Resource not accessible by integration"}]
    answer = {"data": {"repository": {"pullRequest": None}}, "errors": errors}
    respx.post(f"{GITHUB_API}/graphql").mock(return_value=httpx.Response(200, json=answer))
    with pytest.raises(GitHubError, match="not accessible"):
        await client.graphql(7, CLOSING_ISSUES, {"owner": "acme", "name": "web", "number": 1})
    assert await GitHubReadsAdapter(client).closing_issues(7, REPO, 1) == set()


async def test_without_the_pull_requests_permission_the_sidebar_is_unknown_not_an_error(
    standin: tuple[GitHubReadsAdapter, StandinState],
) -> None:
    """GitHub answers 200 with FORBIDDEN: the closing issues are read as none, the delivery goes on."""
    reads, state = standin
    state.installations[7].permissions.pop("pull_requests")
    assert await reads.closing_issues(7, REPO, 36) == set()
    [call] = state.calls_to("POST", "/graphql")
    assert call.status == 200
