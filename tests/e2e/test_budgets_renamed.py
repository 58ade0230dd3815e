"""Budgets through the real server and the GitHub stand-in, across a rename (SPEC *Answers that
cannot be forged or jammed*, *Repository identity and sessions*): they count per repository by
GitHub's id, so acme/web renamed acme/site (the same id, GitHub's `renamed` webhook processed)
gives no one a fresh budget through the API, and a runner's monthly cost still counts."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from github_standin.events import repository_moved
from support.world import CONFIG, REPO, World, comment_payload
from tests.e2e.test_api import call, installation_calls, token
from tests.e2e.test_loops import A, _world
from tests.e2e.test_repository_identity import in_repository

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


@pytest.mark.parametrize(
    "limit_line",
    [
        pytest.param("commands_per_hour: 2", id="the command budget"),
        pytest.param("outsider_requests_per_hour: 2", id="a role-less account's requests"),
    ],
)
async def test_a_rename_does_not_restart_an_accounts_api_budget(world: World, limit_line: str) -> None:
    """`limits.commands_per_hour: 2`, or `limits.outsider_requests_per_hour: 2`: mallory, without
    a role, spends it with two refused `/claim`s on acme/web (her roles asked each time); after
    the rename her third, on acme/site, is 429 and costs the installation nothing but the read of
    the rules under the new name (forgotten by the rename: the limit is in them)."""
    limit(world, limit_line)
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


@pytest.fixture
async def budgeted(tmp_path: Path) -> AsyncIterator[World]:
    async for world in _world(tmp_path, CONFIG + "limits:\n  cost_per_runner_month: 1\n"):
        yield world


async def test_a_rename_does_not_restart_a_runners_monthly_cost_budget(budgeted: World) -> None:
    """cody's delivery on acme/web#12 reports $1.50 against a $1 monthly limit; after the rename
    his `/claim` on acme/site#14 is refused `budget_exhausted`: the deliveries moved with the
    tickets, and the month's cost is read from them."""
    world = budgeted
    await world.say("rachel", "/publish")
    await world.say("cody", "/claim")
    await world.say("cody", f"/deliver commit={A} cost=1.50 Done.")
    await rename(world)
    await say_in(world, "rachel", "/publish", 14)
    await say_in(world, "cody", "/claim", 14)
    assert any(
        '"code":"budget_exhausted"' in c.body for c in world.github.comments.values() if c.repo == SITE
    )


async def say_in(world: World, login: str, body: str, number: int) -> None:
    """`login` comments on acme/site#`number` (acme/web renamed); wait until it is processed."""
    written = world.github.add_comment(SITE, number, body, user=login)
    payload = comment_payload(login, body, number, id=written.id, user_id=world.github.user_id(login))
    await world.send("issue_comment", in_repository(payload, SITE))
