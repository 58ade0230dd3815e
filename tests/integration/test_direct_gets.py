"""Calls as an installation (GETs, and writes) sent past httpx's client once githubkit's flow
has signed their route (`app.github.installation_routes`), against the stand-in: githubkit's
own token, the same answers and ETags, one token exchange; and a token githubkit no longer
keeps is never sent."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from app.github.aiohttp_transport import AiohttpTransport
from app.github.client import GitHubClient, GitHubUnavailable
from app.github.conditional_get import MemoryHttpCache
from app.github.installation_routes import InstallationRoutes
from app.runtime.metrics import Metrics
from app.store.database import Database
from app.store.token_cache import SharedTokens, SharedTokenStrategy, sealing_key
from github_standin import StandinState, running_standin
from support.servers import app_settings
from tests.integration.standin_reads import client_over

REPO = "acme/web"


@pytest.fixture
async def standin() -> AsyncIterator[tuple[GitHubClient, StandinState]]:
    state = StandinState()
    state.add_installation(7, "acme")
    state.add_repository(REPO)
    state.add_issue(REPO, 12)
    state.add_issue(REPO, 13)
    async with client_over(state, transport=AiohttpTransport(), http_cache=MemoryHttpCache()) as github:
        yield github, state


async def test_later_gets_reuse_the_flows_token_and_keep_conditional_requests(
    standin: tuple[GitHubClient, StandinState],
) -> None:
    github, state = standin
    first = await github.call("get_issue", 7, repository=REPO, number=12)
    assert github._routes.signed("/repos/{repository}/issues/{number}")  # later ones go direct
    again = await github.call("get_issue", 7, repository=REPO, number=12)  # past httpx: a 304
    other = await github.call("get_issue", 7, repository=REPO, number=13)
    assert first["number"] == again["number"] == 12 and other["number"] == 13
    calls = [(call.method, call.path, call.auth, call.status) for call in state.calls]
    assert calls == [
        ("POST", "/app/installations/7/access_tokens", "jwt", 201),
        ("GET", f"/repos/{REPO}/issues/12", "installation", 200),
        ("GET", f"/repos/{REPO}/issues/12", "installation", 304),
        ("GET", f"/repos/{REPO}/issues/13", "installation", 200),
    ]


async def test_a_token_githubkit_no_longer_keeps_is_never_sent(
    standin: tuple[GitHubClient, StandinState],
) -> None:
    """The stand-in's clock runs ahead of githubkit's: the token expires on GitHub while githubkit
    has let it go (a minute before expiry): the next GET goes through the flow for a new one."""
    github, state = standin
    await github.call("get_issue", 7, repository=REPO, number=12)
    github._github.config.cache_strategy.get_cache_storage()._cache.clear()  # githubkit dropped it
    state.tokens.clear()  # and GitHub no longer accepts it
    issue = await github.call("get_issue", 7, repository=REPO, number=13)
    assert issue["number"] == 13
    exchanges = [call for call in state.calls if call.path == "/app/installations/7/access_tokens"]
    assert len(exchanges) == 2


async def test_a_token_github_refused_is_forgotten_and_the_next_call_gets_a_new_one(
    standin: tuple[GitHubClient, StandinState],
) -> None:
    """A token revoked before its time: that call fails as transient (GitHub did nothing), the
    token is dropped from the cache (shared by every process, `app.store.token_cache`), and the
    next call asks for a new one instead of meeting 401 until the old one's expiry."""
    github, state = standin
    await github.call("get_issue", 7, repository=REPO, number=12)
    state.tokens.clear()  # revoked on GitHub, still in githubkit's cache
    with pytest.raises(GitHubUnavailable, match="401") as refused:
        await github.call("get_issue", 7, repository=REPO, number=13)
    assert refused.value.ambiguous is False
    issue = await github.call("get_issue", 7, repository=REPO, number=13)
    assert issue["number"] == 13
    exchanges = [call for call in state.calls if call.path == "/app/installations/7/access_tokens"]
    assert len(exchanges) == 2


def test_only_routes_signed_with_an_installation_token_are_kept() -> None:
    routes = InstallationRoutes()
    routes.saw(
        "/repos/{repository}",
        httpx.Request("GET", "https://api.github.com/repos/a/b", headers={"Authorization": "token t1"}),
    )
    routes.saw(
        "/app", httpx.Request("GET", "https://api.github.com/app", headers={"Authorization": "Bearer jwt"})
    )
    routes.saw("/x", httpx.Request("GET", "https://api.github.com/x"))
    assert routes.signed("/repos/{repository}")
    assert not routes.signed("/app") and not routes.signed("/x")


async def test_writes_go_past_httpx_too_once_their_route_is_signed(
    standin: tuple[GitHubClient, StandinState],
) -> None:
    """A write as the installation (a comment) is sent past httpx's client once the flow has
    signed its route: the same token, JSON body and answer; what GitHub stored is what was sent."""
    github, state = standin
    await github.call("create_comment", 7, repository=REPO, number=12, json={"body": "first"})
    assert github._routes.signed("/repos/{repository}/issues/{number}/comments")

    class Refuses:
        async def request(self, *args: object, **kwargs: object) -> httpx.Response:
            raise AssertionError("went through httpx's client")

    kept, github._http = github._http, Refuses()  # type: ignore[assignment]
    try:
        made = await github.call("create_comment", 7, repository=REPO, number=12, json={"body": "ünï 😀"})
    finally:
        github._http = kept
    assert made["body"] == "ünï 😀"
    assert [c.body for c in state.comments.values()] == ["first", "ünï 😀"]
    posts = [(c.auth, c.status) for c in state.calls if c.method == "POST" and c.path.endswith("/comments")]
    assert posts == [("installation", 201), ("installation", 201)]


async def test_a_process_new_to_an_installation_goes_direct_with_the_token_another_stored(
    database: Database,
) -> None:
    """Two processes sharing their tokens through the database: the second, which has signed the
    route already (for another installation), calls for the first's installation past the flow,
    with the token the first stored: no token of its own, no auth flow."""
    state = StandinState()
    for installation, org in ((7, "acme"), (8, "beta")):
        state.add_installation(installation, org)
    state.add_repository(REPO)
    state.add_repository("beta/api")
    state.add_issue(REPO, 12)
    state.add_issue("beta/api", 3)
    caches: list[SharedTokens] = []

    def shared(key: object) -> SharedTokenStrategy:
        caches.append(SharedTokens(database, sealing_key(key)))
        return SharedTokenStrategy(caches[-1])

    async with running_standin(state) as running:
        settings = app_settings("sqlite://", GITHUB_API_URL=running.url)
        clients = [
            GitHubClient(settings, Metrics(), transport=AiohttpTransport(), token_cache=shared)
            for _ in range(2)
        ]
        for client in clients:
            await client.start()
        try:
            first, second = clients
            await first.call("get_issue", 7, repository=REPO, number=12)
            await caches[0].settled()
            await second.call("get_issue", 8, repository="beta/api", number=3)  # the route signed
            flows = len(state.calls)
            through_httpx = []
            real = second._http.request  # type: ignore[union-attr]

            async def counted(*arguments: Any, **options: Any) -> httpx.Response:
                through_httpx.append(arguments)
                return await real(*arguments, **options)

            second._http.request = counted  # type: ignore[union-attr,method-assign]
            await second.call("get_issue", 7, repository=REPO, number=12)
        finally:
            for client in clients:
                await client.close()
    assert through_httpx == []
    tokens = [call for call in state.calls if call.path.endswith("/access_tokens")]
    assert [call.path for call in tokens] == [
        "/app/installations/7/access_tokens",
        "/app/installations/8/access_tokens",
    ]
    assert [(call.path, call.auth) for call in state.calls[flows:]] == [
        (f"/repos/{REPO}/issues/12", "installation")
    ]
