"""Commands in comments by an account without a role spend the same budget as through the API
(SPEC *Answers that cannot be forged or jammed*): a flood of them costs the installation little."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from app.store.database import Database
from github_standin import running_standin
from support.world import CONFIG, REPO, World, standin_state
from tests.e2e.test_acceptance import Wall
from tests.e2e.test_api import installation_calls
from tests.fakes import app_settings, running_server


async def test_a_role_less_accounts_flood_of_commented_commands_costs_the_installation_little(
    world: World,
) -> None:
    """120 `/publish` and `/claim` comments by an account without a role: the first
    `outsider_requests_per_hour` (30) have their roles asked: in full the first time, then as a
    stranger's (no team read: no call) for ten minutes; the rest are silent and call nothing; a
    requester still publishes."""
    await world.say("rachel", "/publish")
    before, costs = len(world.github.calls), []
    for n in range(120):
        start = len(world.github.calls)
        await world.say("mallory", "/publish" if n % 2 == 0 else "/claim")
        costs.append(installation_calls(world, start))
    spent = installation_calls(world, before)
    print(f"\ncomment flood: {len(spent)} counted installation calls")
    role_checks = [c for c in spent if c.path.endswith("/mallory")]
    assert len(role_checks) <= 6  # every role list's team once, then nothing more for ten minutes
    assert all(c.path.startswith("/orgs/") for c in role_checks)
    assert [calls for calls in costs[30:]] == [[]] * 90  # past the budget: nothing asked, nothing written
    assert len(spent) <= 2 + 29 + 4  # and the reply limit's three replies and one reaction
    world.github.repositories[REPO].issues[13].body = "Real work"
    await world.say("rachel", "/publish", number=13)
    ticket = world.ticket(13)
    assert ticket is not None and ticket.exists


async def test_a_role_less_accounts_flood_of_commands_on_a_pull_request_calls_nothing_past_the_budget(
    world: World,
) -> None:
    """60 `/claim` comments by an account without a role on a pull request that links the
    ticket: past `outsider_requests_per_hour` (30) they are silent and GitHub is asked nothing,
    not even the pull request (read for its ticket only once the comment is admitted). On
    GitHub every new comment changes the pull request, so its read is never a free 304: the PR
    body is edited before each comment to mirror that."""
    await world.say("rachel", "/publish")
    costs = await flood(world, "/claim", body="Fixes #12")
    assert costs[30:] == [[]] * 30, costs[30:33]
    assert world.ticket().work.value == "open"


@pytest.fixture
async def walled(tmp_path: Path) -> AsyncIterator[tuple[World, Wall]]:
    """The `world` with a server clock the test moves forward."""
    wall, state = Wall(), standin_state()
    async with running_standin(state) as standin:
        url = f"sqlite:///{tmp_path}/railyard.db"
        settings = app_settings(url, GITHUB_API_URL=standin.url, APP_ID="1")
        async with running_server(settings, clock=wall) as server:
            yield World(server, state, Database(url)), wall


async def test_strangers_spending_the_shared_budget_never_lock_out_an_account_given_a_role_since(
    walled: tuple[World, Wall],
) -> None:
    """`outsider_requests_per_hour: 3`: mallory's `/claim` finds her without a role (marked for
    the hour, her roles asked in full); strangers then spend every role-less request of the
    hour; mallory joins @acme/agents. Within ten minutes of that check her `/claim` is silent and
    asks nothing; past them her roles are asked in full again and she claims. A role-less account
    gets that re-check once in ten minutes: past it, silence and no call, with some of its own
    share of the hour left."""
    world, wall = walled
    world.github.repositories[REPO].files[".github/railyard.yml"] = (
        CONFIG + "limits:\n  outsider_requests_per_hour: 3\n"
    )
    await world.say("rachel", "/publish")
    await world.say("mallory", "/claim")
    for n in range(10):
        for _ in range(3):
            await world.say(f"stranger{n}", "/claim")
    world.github.team_memberships[("acme", "agents", "mallory")] = "active"
    before = len(world.github.calls)
    await world.say("mallory", "/claim")
    assert world.ticket().work.value == "open" and installation_calls(world, before) == []
    wall.ahead = timedelta(minutes=10, seconds=1)
    await world.say("mallory", "/claim")
    assert world.ticket().work.value == "claimed"
    costs = []
    for _ in range(3):  # found role-less (asked in full), then silent for ten minutes
        before = len(world.github.calls)
        await world.say("late", "/claim")
        costs.append([c.path for c in installation_calls(world, before) if c.path.endswith("/late")])
    assert costs[0] and costs[1] == [] and costs[2] == [], costs


async def test_commands_on_a_pull_linking_no_ticket_stop_costing_past_the_budget(world: World) -> None:
    """60 `/claim` comments by an account without a role on PR #34, which links no ticket (its
    body edited each time, as every new comment changes a PR on GitHub). Each reads the PR to find
    its ticket and is answered that none is linked; that read is an installation call, spent from
    the author's role-less requests: past `outsider_requests_per_hour` (30) nothing is called."""
    await world.say("rachel", "/publish")
    costs = await flood(world, "/claim", body="No ticket here")
    assert all(costs[:30]) and costs[30:] == [[]] * 30, costs[28:33]


async def test_a_person_with_a_role_is_never_silenced_by_commands_on_a_pull_linking_no_ticket(
    world: World,
) -> None:
    """`outsider_requests_per_hour: 3`: rachel (a requester) writes `/deliver` three times on PR
    #34, which links no ticket (each answered: name the ticket). Her roles are asked then, so the
    reads are not spent from role-less requests: her `/publish` on #13 still runs."""
    world.github.repositories[REPO].files[".github/railyard.yml"] = (
        CONFIG + "limits:\n  outsider_requests_per_hour: 3\n"
    )
    await world.say("rachel", "/publish")
    pull = world.github.repositories[REPO].pulls[34]
    for n in range(3):
        pull.body = "No ticket here" + "\n" * (n + 1)
        await world.say("rachel", "/deliver", number=34, pr=True)
    world.github.repositories[REPO].issues[13].body = "Real work"
    await world.say("rachel", "/publish", number=13)
    ticket = world.ticket(13)
    assert ticket is not None and ticket.exists


async def test_help_on_a_pull_request_stops_costing_past_the_budget(world: World) -> None:
    """60 `/help` comments by an account without a role on PR #34: each reads the PR (a call)
    before it is known to ask only for information; past the budget nothing is called."""
    await world.say("rachel", "/publish")
    costs = await flood(world, "/help", body="Fixes #12")
    assert costs[30:] == [[]] * 30, costs[30:33]


async def flood(world: World, command: str, *, body: str) -> list[list[tuple[str, str]]]:
    """60 comments `command` by mallory (no role) on PR #34, its body edited before each (on
    GitHub every new comment changes the PR, so its read is never a free 304): the installation's
    calls each one cost."""
    pull = world.github.repositories[REPO].pulls[34]
    costs = []
    for n in range(60):
        pull.body = body + "\n" * (n + 1)
        start = len(world.github.calls)
        await world.say("mallory", command, number=34, pr=True)
        costs.append([(c.method, c.path) for c in installation_calls(world, start)])
    return costs


def _early_in_an_hour(wall: Wall) -> None:
    """Move the server's clock to one minute past the start of the next hour's budget window,
    so the steps of a test fall in one hour whatever the real time is."""
    now = wall()
    wall.ahead += timedelta(seconds=(now // 3600 + 1) * 3600 + 60 - now)


async def test_an_account_found_holding_a_role_is_not_asked_as_a_stranger_afterwards(
    walled: tuple[World, Wall],
) -> None:
    """mallory's `/claim` finds her without a role (marked for the hour). She joins @acme/agents;
    ten minutes later her `/claim` asks her roles in full and claims #12: she holds the runner
    role, as GitHub has just said. Her `/claim` on #13 a minute later must claim too: an account
    holding a role is never taken for a stranger (docs/security.md: found role-less only when it
    holds no role at all)."""
    world, wall = walled
    _early_in_an_hour(wall)
    await world.say("rachel", "/publish")
    world.github.repositories[REPO].issues[13].body = "Real work"
    await world.say("rachel", "/publish", number=13)
    await world.say("mallory", "/claim")
    assert world.ticket().work.value == "open"  # no role: refused, marked
    world.github.team_memberships[("acme", "agents", "mallory")] = "active"
    wall.ahead += timedelta(minutes=10, seconds=1)
    await world.say("mallory", "/claim")
    assert world.ticket().work.value == "claimed"  # asked in full: she is a runner
    wall.ahead += timedelta(minutes=1)
    await world.say("mallory", "/claim", number=13)
    assert world.ticket(13).work.value == "claimed", world.replies(13)
