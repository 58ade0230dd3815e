"""Through the real server: a repeated command reads GitHub conditionally, at no rate-limit cost."""

from __future__ import annotations

from pathlib import Path

from app.store.database import Database
from github_standin import running_standin
from support.world import REPO, World, standin_state
from tests.fakes import app_settings, running_server

CONFIG = f"/repos/{REPO}/contents/.github/railyard.yml"
MEMBER, NOT_MEMBER = (
    "/orgs/acme/teams/product/memberships/rachel",
    "/orgs/acme/teams/leads/memberships/rachel",
)
ISSUE = f"/repos/{REPO}/issues/12"


def reads(world: World) -> dict[str, tuple[int, bool]]:
    """The config, issue and team-membership GETs the stand-in answered: path -> (status, counted)."""
    return {
        call.path: (call.status, call.counted)
        for call in world.github.calls
        if call.method == "GET" and call.path in (CONFIG, MEMBER, NOT_MEMBER, ISSUE)
    }


async def test_a_second_identical_command_costs_304s_not_counted_calls(world: World) -> None:
    """The second /publish reads the config and the membership again as 304s that count against nothing."""
    await world.say("rachel", "/publish")
    first = reads(world)
    world.github.calls.clear()
    await world.say("rachel", "/publish")
    second = reads(world)
    # rachel holds requester (@acme/product), the first role /publish can use: her task_owner
    # team (@acme/leads, where GitHub would answer an uncacheable 404) is never asked.
    assert first == {CONFIG: (200, True), MEMBER: (200, True), ISSUE: (200, True)}
    assert second[CONFIG] == second[MEMBER] == (304, False)
    # As on GitHub: each new comment changes the issue (its `comments` count), so it still counts.
    assert second[ISSUE] == (200, True) and NOT_MEMBER not in second


async def test_with_the_cache_off_every_read_is_counted(tmp_path: Path) -> None:
    """HTTP_CACHE_MAX_ROWS=0: no If-None-Match is sent, so the repeated command's reads all count."""
    async with running_standin(standin_state()) as standin:
        url = f"sqlite:///{tmp_path}/railyard.db"
        settings = app_settings(url, GITHUB_API_URL=standin.url, APP_ID="1", HTTP_CACHE_MAX_ROWS="0")
        async with running_server(settings) as server:
            world = World(server, standin.state, Database(url))
            await world.say("rachel", "/publish")
            world.github.calls.clear()
            await world.say("rachel", "/publish")
            second = reads(world)
    assert second[CONFIG] == second[MEMBER] == (200, True)
    assert world.github.counters()["not_modified"] == 0
