"""What one signed-in page costs the installation, whoever asks: a person who holds no
permission anywhere (an outsider with a free GitHub account) pays one page read for a page
(docs/what-people-see.md, app.web.page_costs), and a page's own asks of GitHub must not grow
with the number of repositories railyard keeps tickets of."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest

from app.store.web_sessions import SESSIONS_PER_ACCOUNT
from app.web.oauth import SIGN_IN
from support.web_world import WebWorld, say_in, web_world

SERVED = 30  # public repositories railyard keeps tickets of, besides the world's own


@pytest.fixture
async def web(tmp_path: Path) -> AsyncIterator[WebWorld]:
    """The server with sign-in; a ticket in each of SERVED public acme repositories."""
    async with web_world(tmp_path) as world:
        for n in range(SERVED):
            name = f"acme/pub{n:02d}"
            repository = world.github.add_repository(name, files={}, private=False)
            repository.branches["main"] = "3" * 40
            world.github.add_issue(name, 1, title="Public work", body="Docs")
            world.github.permissions[(name, "olivia")] = "admin"
            await say_in(world, name, "olivia", "/publish --no-code", 1)
        yield world


async def test_an_outsiders_repository_list_costs_github_calls_bounded_by_the_page_not_the_record(
    web: WebWorld,
) -> None:
    """rita holds no permission on any repository. Signing in and opening /tickets three times
    (each sign-in a new token), then five loads at once, costs GitHub one ask of each served
    repository in all, not one per served repository each time."""
    asked: list[int] = []
    async with web.browser_session() as client:
        for _ in range(3):
            web.github.oauth.approving = "rita"
            client.cookie_jar.clear()
            async with client.get("/tickets/acme/nothing") as response:  # lands asking no repository
                assert response.status == 404
            web.github.calls.clear()
            async with client.get("/tickets") as response:
                assert response.status == 200 and 'href="/tickets/acme/pub00"' in await response.text()
            asked.append(len(web.github.calls_to("GET", "/repos/")))
        client.cookie_jar.clear()
        async with client.get("/tickets/acme/nothing") as response:
            assert response.status == 404
        web.github.calls.clear()

        async def load() -> int:
            async with client.get("/tickets") as response:
                return response.status

        assert await asyncio.gather(*[load() for _ in range(5)]) == [200] * 5
        asked.append(len(web.github.calls_to("GET", "/repos/")))
    # Before: SERVED calls at each sign-in, and the parallel loads each asked afresh (30 / 30 / 30
    # / ~100). Now the first asks each served repository once; what GitHub said is kept for the
    # account (not the token), a public one listed to anyone for a minute, and asks at one moment share.
    assert asked[0] <= SERVED and max(asked[1:]) <= 5, f"GitHub calls per /tickets: {asked}"


READ_ONLY = 150  # acme repositories mallory may read (two pages of GitHub's installation list)


async def test_signing_in_again_and_again_keeps_no_more_in_memory_than_the_accounts_live_sessions(
    tmp_path: Path,
) -> None:
    """mallory can read 150 acme repositories (a read-only member: no railyard role). She signs
    in 25 times (each sign-in a new GitHub token; an account keeps at most 10 sessions, the
    eleventh ends the oldest). What sign-in keeps in memory for her should be bounded by her
    live sessions, not grow with every sign-in."""
    async with web_world(tmp_path) as web:
        for n in range(READ_ONLY):
            web.github.add_repository(f"acme/lib{n:03d}", files={}, private=True)
            web.github.permissions[(f"acme/lib{n:03d}", "mallory")] = "read"
        access = web.server.app[SIGN_IN].access
        for _ in range(25):
            async with web.browser_session() as client:
                web.github.oauth.approving = "mallory"
                async with client.get("/tickets/acme/nothing") as response:
                    assert response.status == 404
        tokens = {key for key in access._checked} | {key for key, _ in access._etags}
        kept = sum(len(orjson.dumps(body)) for _, body, _ in access._etags.values())
        assert len(tokens) <= SESSIONS_PER_ACCOUNT, (
            f"{len(tokens)} tokens' caches kept for one account, {kept // 1024} KB of GitHub's JSON"
        )
