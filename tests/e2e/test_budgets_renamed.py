"""Budgets through the real server and the GitHub stand-in, across a rename (SPEC *Answers that
cannot be forged or jammed*, *Repository identity and sessions*): they count per repository by
GitHub's id, so acme/web renamed acme/site (the same id, GitHub's `renamed` webhook processed)
gives no one a fresh budget through the API."""

from __future__ import annotations

import json
from typing import Any

from github_standin.events import repository_moved
from support.world import REPO, World
from tests.e2e.test_api import call, installation_calls, token

SITE = "acme/site"


def limit(world: World, line: str) -> None:
    """Add `line` under `limits:` in acme/web's configuration file."""
    repository = world.github.repository(REPO)
    assert repository is not None
    repository.files[".github/railyard.yml"] += f"limits:\n  {line}\n"


async def rename(world: World) -> None:
    """acme/web is renamed acme/site on GitHub, and its `renamed` webhook is processed."""
    moved = world.github.rename_repository(REPO, SITE)
    guid, payload = repository_moved(world.github, "https://api.github.com", moved, REPO, 7, "max")
    assert (await world.server.deliver("repository", json.dumps(payload).encode(), guid)).status == 202
    await world.settle()


async def test_a_rename_does_not_restart_an_accounts_api_command_budget(world: World) -> None:
    """`limits.commands_per_hour: 2`: mallory's two refused `/claim`s spend her budget on acme/web;
    after the rename her `/claim` on acme/site is 429 and costs the installation nothing but the
    read of the rules under the new name (forgotten by the rename: the limit is in them)."""
    limit(world, "commands_per_hour: 2")
    await world.say("rachel", "/publish")
    mallory = token(world, "mallory")
    for n in range(2):
        assert (await call_claim(world, mallory, REPO, n))[0] == 403
    await rename(world)
    before = len(world.github.calls)
    status, answer = await call_claim(world, mallory, SITE, 2)
    assert status == 429 and answer["error"]["code"] == "over_budget", (status, answer)
    assert not_the_rules(installation_calls(world, before)) == []


async def test_a_rename_does_not_restart_a_role_less_accounts_api_requests(world: World) -> None:
    """`limits.outsider_requests_per_hour: 2`: mallory, without a role, has her roles asked for two
    `/claim`s on acme/web; after the rename her third, on acme/site, is 429 and asks nothing (but
    the rules under the new name)."""
    limit(world, "outsider_requests_per_hour: 2")
    await world.say("rachel", "/publish")
    mallory = token(world, "mallory")
    for n in range(2):
        assert (await call_claim(world, mallory, REPO, n))[0] == 403
    await rename(world)
    before = len(world.github.calls)
    status, answer = await call_claim(world, mallory, SITE, 2)
    assert status == 429 and answer["error"]["code"] == "over_budget", (status, answer)
    assert not_the_rules(installation_calls(world, before)) == []


def not_the_rules(calls: list[Any]) -> list[Any]:
    """The calls but the read of the configuration file."""
    return [c for c in calls if not c.path.endswith("/contents/.github/railyard.yml")]


async def call_claim(world: World, credential: str, name: str, n: int) -> tuple[int, Any]:
    """`/claim` on `name`#12 with the token `credential`, under the key `claim-n`."""
    path = f"/api/v1/repos/{name}/tickets/12/commands"
    status, answer, _ = await call(world, credential, "POST", path, {"command": "/claim"}, f"claim-{n}")
    return status, answer
