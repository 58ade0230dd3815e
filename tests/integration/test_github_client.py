"""The GitHub client layer against respx: tokens, lenient JSON, errors and rate limits."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
import respx

from app.github.client import GitHubClient, GitHubUnavailable, Moved, NotFound, PermissionDenied, RateLimited
from tests.fakes import GITHUB_API, StillClock, started_client, token_response

TOKEN_ROUTE = f"{GITHUB_API}/app/installations/7/access_tokens"
COMMENTS = f"{GITHUB_API}/repos/acme/web/issues/12/comments"


@pytest.fixture
async def client() -> AsyncIterator[GitHubClient]:
    """A started client pointed at a fake GitHub Enterprise URL, with a controllable clock."""
    async with started_client(clock=StillClock()) as github:
        yield github


@respx.mock
async def test_an_installation_token_is_fetched_once_and_reused(client: GitHubClient) -> None:
    """Many calls, one token request: the token is cached until shortly before it expires."""
    tokens = respx.post(TOKEN_ROUTE).mock(return_value=httpx.Response(201, json=token_response("ghs_one")))
    comments = respx.get(COMMENTS).mock(return_value=httpx.Response(200, json=[]))
    for _ in range(5):
        assert await client.call("list_comments", 7, repository="acme/web", number=12) == []
    assert tokens.call_count == 1
    assert comments.calls.last.request.headers["Authorization"] == "token ghs_one"
    assert tokens.calls.last.request.headers["Authorization"].startswith("Bearer ey")
    assert comments.calls.last.request.headers["X-GitHub-Api-Version"] == "2022-11-28"


@respx.mock
async def test_app_endpoints_use_the_app_jwt(client: GitHubClient) -> None:
    """/app/hook/deliveries is called as the app, not as an installation."""
    route = respx.get(f"{GITHUB_API}/app/hook/deliveries").mock(return_value=httpx.Response(200, json=[]))
    assert await client.call("list_hook_deliveries", None, params={"per_page": 100}) == []
    assert route.calls.last.request.headers["Authorization"].startswith("Bearer ey")


@respx.mock
async def test_extra_and_unknown_fields_are_returned_as_plain_json(client: GitHubClient) -> None:
    """No typed model decides whether a response is acceptable."""
    respx.post(TOKEN_ROUTE).mock(return_value=httpx.Response(201, json=token_response()))
    body = {"id": 1, "body": "hi", "brand_new_field": {"x": [1]}, "user": None}
    respx.post(COMMENTS).mock(return_value=httpx.Response(201, json=body))
    assert (
        await client.call("create_comment", 7, repository="acme/web", number=12, json={"body": "hi"}) == body
    )


@respx.mock
async def test_a_rate_limited_token_request_pauses_the_installation_and_the_app(client: GitHubClient) -> None:
    """403 + Retry-After on the installation-token request: no call for the installation, and no
    app call, leaves before GitHub's time (found by bench/chaos.py: a token request 0.06 s early)."""
    tokens = respx.post(TOKEN_ROUTE).mock(
        return_value=httpx.Response(
            403,
            headers={"Retry-After": "4"},
            json={"message": "You have exceeded a secondary rate limit. Please wait a few minutes."},
        )
    )
    comments = respx.get(COMMENTS).mock(return_value=httpx.Response(200, json=[]))
    with pytest.raises(RateLimited) as first:
        await client.call("list_comments", 7, repository="acme/web", number=12)
    assert first.value.retry_at == 1_800_000_004.0
    with pytest.raises(RateLimited):
        await client.call("list_comments", 7, repository="acme/web", number=12)
    with pytest.raises(RateLimited):
        await client.call("list_hook_deliveries", None, params={"per_page": 100})
    assert tokens.call_count == 1 and comments.call_count == 0


@respx.mock
async def test_a_secondary_rate_limit_blocks_the_whole_installation_without_sleeping(
    client: GitHubClient,
) -> None:
    """403 + Retry-After: this call and every later call fail fast until the wait is over."""
    respx.post(TOKEN_ROUTE).mock(return_value=httpx.Response(201, json=token_response()))
    limited = respx.post(COMMENTS).mock(
        return_value=httpx.Response(
            403,
            headers={"Retry-After": "30"},
            json={"message": "You have exceeded a secondary rate limit. Please wait a few minutes."},
        )
    )
    other = respx.get(f"{GITHUB_API}/repos/acme/web/issues/13").mock(
        return_value=httpx.Response(200, json={})
    )
    with pytest.raises(RateLimited) as first:
        await client.call("create_comment", 7, repository="acme/web", number=12, json={"body": "x"})
    assert first.value.retry_at == 1_800_000_030.0
    with pytest.raises(RateLimited):
        await client.call("get_issue", 7, repository="acme/web", number=13)
    assert limited.call_count == 1 and other.call_count == 0
    client._clock.now += 31  # type: ignore[attr-defined]
    assert await client.call("get_issue", 7, repository="acme/web", number=13) == {}


@respx.mock
async def test_a_primary_rate_limit_waits_for_the_reset_time(client: GitHubClient) -> None:
    """x-ratelimit-remaining: 0 means wait until x-ratelimit-reset."""
    respx.post(TOKEN_ROUTE).mock(return_value=httpx.Response(201, json=token_response()))
    headers = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1800000600"}
    respx.get(COMMENTS).mock(
        return_value=httpx.Response(403, headers=headers, json={"message": "API rate limit"})
    )
    with pytest.raises(RateLimited) as error:
        await client.call("list_comments", 7, repository="acme/web", number=12)
    assert error.value.retry_at == 1_800_000_600.0


@respx.mock
async def test_429_is_a_rate_limit(client: GitHubClient) -> None:
    """Too Many Requests with Retry-After is honoured like a secondary limit."""
    respx.post(TOKEN_ROUTE).mock(return_value=httpx.Response(201, json=token_response()))
    respx.get(COMMENTS).mock(return_value=httpx.Response(429, headers={"Retry-After": "5"}, json={}))
    with pytest.raises(RateLimited) as error:
        await client.call("list_comments", 7, repository="acme/web", number=12)
    assert error.value.retry_at == 1_800_000_005.0


@respx.mock
async def test_a_5xx_after_a_post_is_ambiguous_and_after_a_get_is_not(client: GitHubClient) -> None:
    """GitHub may have created the comment before answering 502; a GET changed nothing."""
    respx.post(TOKEN_ROUTE).mock(return_value=httpx.Response(201, json=token_response()))
    respx.post(COMMENTS).mock(return_value=httpx.Response(502))
    respx.get(COMMENTS).mock(return_value=httpx.Response(503))
    with pytest.raises(GitHubUnavailable) as post:
        await client.call("create_comment", 7, repository="acme/web", number=12, json={"body": "x"})
    with pytest.raises(GitHubUnavailable) as get:
        await client.call("list_comments", 7, repository="acme/web", number=12)
    assert post.value.ambiguous and not get.value.ambiguous


@respx.mock
async def test_a_read_timeout_on_a_post_is_ambiguous(client: GitHubClient) -> None:
    """A timeout after the request was sent may hide a success."""
    respx.post(TOKEN_ROUTE).mock(return_value=httpx.Response(201, json=token_response()))
    respx.post(COMMENTS).mock(side_effect=httpx.ReadTimeout("slow"))
    with pytest.raises(GitHubUnavailable) as error:
        await client.call("create_comment", 7, repository="acme/web", number=12, json={"body": "x"})
    assert error.value.ambiguous


@respx.mock
async def test_404_and_a_permission_403_are_permanent_errors(client: GitHubClient) -> None:
    """Not found and missing permission are answers, not outages."""
    respx.post(TOKEN_ROUTE).mock(return_value=httpx.Response(201, json=token_response()))
    respx.get(f"{GITHUB_API}/orgs/acme/teams/agents/memberships/bot").mock(
        return_value=httpx.Response(404, json={"message": "Not Found"})
    )
    respx.get(f"{GITHUB_API}/orgs/acme/teams/leads/memberships/bot").mock(
        return_value=httpx.Response(403, json={"message": "Resource not accessible by integration"})
    )
    with pytest.raises(NotFound):
        await client.call("get_team_membership", 7, org="acme", team_slug="agents", username="bot")
    with pytest.raises(PermissionDenied) as denied:
        await client.call("get_team_membership", 7, org="acme", team_slug="leads", username="bot")
    assert "not accessible" in denied.value.message


@respx.mock
async def test_a_failing_token_request_is_transient(client: GitHubClient) -> None:
    """If GitHub cannot issue a token right now, the call is retried later."""
    respx.post(TOKEN_ROUTE).mock(return_value=httpx.Response(502, json={"message": "bad gateway"}))
    with pytest.raises(GitHubUnavailable):
        await client.call("list_comments", 7, repository="acme/web", number=12)


@respx.mock
async def test_a_301_is_followed_for_a_read_on_the_api_and_never_elsewhere(client: GitHubClient) -> None:
    """A transferred issue's 301 is followed once for a GET under the API URL; a 301 pointing
    off the API, or answering a write, raises Moved with the location and sends nothing there."""
    respx.post(TOKEN_ROUTE).mock(return_value=httpx.Response(201, json=token_response("ghs_one")))
    moved = f"{GITHUB_API}/repositories/9/issues/7"
    respx.get(f"{GITHUB_API}/repos/acme/web/issues/12").mock(
        return_value=httpx.Response(301, headers={"Location": moved}, json={"message": "Moved Permanently"})
    )
    new_home = respx.get(moved).mock(return_value=httpx.Response(200, json={"number": 7}))
    assert await client.call("get_issue", 7, repository="acme/web", number=12) == {"number": 7}
    assert new_home.calls.last.request.headers["Authorization"] == "token ghs_one"
    elsewhere = respx.get("https://elsewhere.example/issues/7").mock(return_value=httpx.Response(200))
    respx.get(f"{GITHUB_API}/repos/acme/web/issues/13").mock(
        return_value=httpx.Response(301, headers={"Location": "https://elsewhere.example/issues/7"})
    )
    with pytest.raises(Moved) as off_api:
        await client.call("get_issue", 7, repository="acme/web", number=13)
    assert off_api.value.location == "https://elsewhere.example/issues/7" and elsewhere.call_count == 0
    respx.post(COMMENTS).mock(return_value=httpx.Response(301, headers={"Location": f"{moved}/comments"}))
    with pytest.raises(Moved) as write:
        await client.call("create_comment", 7, repository="acme/web", number=12, json={"body": "x"})
    assert write.value.location == f"{moved}/comments"


@respx.mock
async def test_a_remaining_quota_of_digits_that_are_not_ascii_is_not_a_failed_call(
    client: GitHubClient,
) -> None:
    """`str.isdigit` takes `²`, `int` does not: an answer whose x-ratelimit-remaining is such a
    digit (a proxy's) is still the answer, its quota simply not noted."""
    respx.post(TOKEN_ROUTE).mock(return_value=httpx.Response(201, json=token_response()))
    headers = [(b"x-ratelimit-remaining", "²".encode("latin-1"))]
    respx.get(COMMENTS).mock(return_value=httpx.Response(200, headers=headers, json=[]))
    assert await client.call("list_comments", 7, repository="acme/web", number=12) == []
