"""GETs as an installation sent past httpx's client once githubkit's flow has signed their route
(`app.github.seen_headers`), against the stand-in: the same token, the same answers and ETags,
one token exchange; and the kept headers themselves."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from app.github.aiohttp_transport import AiohttpTransport
from app.github.client import GitHubClient, GitHubError
from app.github.conditional_get import MemoryHttpCache
from app.github.seen_headers import SeenHeaders
from app.runtime.metrics import Metrics
from github_standin import StandinState, running_standin
from tests.fakes import app_settings

REPO = "acme/web"


@pytest.fixture
async def standin() -> AsyncIterator[tuple[GitHubClient, StandinState]]:
    state = StandinState()
    state.add_installation(7, "acme")
    state.add_repository(REPO)
    state.add_issue(REPO, 12)
    state.add_issue(REPO, 13)
    async with running_standin(state) as running:
        settings = app_settings("sqlite://", GITHUB_API_URL=running.url, APP_ID="1")
        github = GitHubClient(settings, Metrics(), transport=AiohttpTransport(), http_cache=MemoryHttpCache())
        await github.start()
        yield github, state
        await github.close()


async def test_later_gets_reuse_the_flows_token_and_keep_conditional_requests(
    standin: tuple[GitHubClient, StandinState],
) -> None:
    github, state = standin
    first = await github.call("get_issue", 7, repository=REPO, number=12)
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


async def test_a_refused_token_forgets_the_kept_header(standin: tuple[GitHubClient, StandinState]) -> None:
    github, state = standin
    await github.call("get_issue", 7, repository=REPO, number=12)
    state.tokens.clear()  # GitHub no longer accepts the installation's token
    with pytest.raises(GitHubError) as refused:
        await github.call("get_issue", 7, repository=REPO, number=13)
    assert refused.value.status == 401
    assert github._seen.get(7, "/repos/{repository}/issues/{number}") is None


def test_a_header_is_kept_per_route_for_at_most_its_age_and_forgotten_per_installation() -> None:
    now = [0.0]
    seen = SeenHeaders(max_age=300.0, clock=lambda: now[0])
    seen.keep(7, "/repos/{repository}", "token t1")
    seen.keep(7, "/repos/{repository}/issues/{number}", "token t1")
    seen.keep(8, "/repos/{repository}", "token t2")
    seen.keep(9, "/repos/{repository}", None)  # the flow set none: nothing kept
    assert seen.get(7, "/repos/{repository}") == "token t1"
    assert seen.get(7, "/app") is None and seen.get(9, "/repos/{repository}") is None
    now[0] = 299.0
    assert seen.get(8, "/repos/{repository}") == "token t2"
    now[0] = 300.0
    assert seen.get(8, "/repos/{repository}") is None  # as old as allowed: the flow again
    seen.forget(7)
    assert seen.get(7, "/repos/{repository}/issues/{number}") is None
