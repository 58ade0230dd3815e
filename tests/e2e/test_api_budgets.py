"""What an API command spends when GitHub fails before the door: a retry of an outage is not
charged again, and a failure the caller can repeat (a role GitHub will not verify) still spends
the budgets that bound what it costs the installation."""

from __future__ import annotations

from typing import Any

import pytest

from github_standin import Fault
from support.world import REPO, World
from tests.e2e.test_api import command, events, token


async def seen_holding_a_role(world: World) -> None:
    """rachel publishes #12 and #13; cody (runner by the team acme/agents) claims #13 and gives it
    up: railyard has seen him holding a role this hour (what a runner that worked before an
    outage has shown)."""
    await world.say("rachel", "/publish")
    await world.say("rachel", "/publish", number=13)
    await world.say("cody", "/claim", number=13)
    await world.say("cody", "/reopen Not mine after all.", number=13)


async def mallorys_claims(world: World, count: int) -> tuple[list[int], list[Any]]:
    """mallory (no role) sends `/claim` `count` times, each with a new key: the statuses, and the
    team reads they made with the installation's token."""
    mallory = token(world, "mallory")
    before, statuses = len(world.github.calls), []
    for _ in range(count):
        statuses.append((await command(world, mallory, "/claim"))[0])
    teams = [c for c in world.github.calls[before:] if c.auth == "installation" and "/teams/" in c.path]
    return statuses, teams


async def test_retries_of_a_command_github_could_not_answer_do_not_spend_the_budget(world: World) -> None:
    """SPEC: 503 records nothing, retry with the same key. cody, seen holding a role this hour,
    gets two 503s (GitHub failing his team read) with two of his four commands left: the third
    try of the same key still applies, as a comment's retried delivery would."""
    repository = world.github.repository(REPO)
    assert repository is not None
    repository.files[".github/railyard.yml"] += "limits:\n  commands_per_hour: 4\n"
    await seen_holding_a_role(world)  # two of his four commands
    world.github.inject("GET", r"/teams/agents/memberships/cody$", Fault(status=502), Fault(status=502))
    for _ in range(2):
        assert (await command(world, "cody", "/claim", key="retry-me"))[0] == 503
    assert world.ticket().work.value == "open"  # nothing ran
    status, answer, _ = await command(world, "cody", "/claim", key="retry-me")
    assert status == 200, answer
    assert len([e for e in events(world) if e.type.value == "claimed"]) == 1


@pytest.mark.parametrize("commands", [3, 12])
async def test_a_role_github_will_not_verify_spends_the_budgets(world: World, commands: int) -> None:
    """SPEC *The API's costs*: every API command counts against the account's budget before any
    installation-token call, refusals included; an account without a role causes at most
    `outsider_requests_per_hour` requests that call GitHub. The installation lacks the
    organization members permission (railyard says it cannot verify, 503: a 503 the caller can
    repeat). mallory's twelve commands, each with a new key, with `commands_per_hour` at 3 or
    above the role-less limit (12): three ask GitHub and are answered 503, the rest are 429.
    Reviews found both budgets given back here (the 503 fix's first version), then the role-less
    one (with the command budget above it): the installation called GitHub without end."""
    repository = world.github.repository(REPO)
    assert repository is not None
    limits = f"limits:\n  commands_per_hour: {commands}\n  outsider_requests_per_hour: 3\n"
    repository.files[".github/railyard.yml"] += limits
    await world.say("rachel", "/publish")
    for installation in world.github.installations.values():
        installation.permissions.pop("members", None)
    statuses, teams = await mallorys_claims(world, 12)
    assert statuses[:3] == [503] * 3 and set(statuses[3:]) == {429}, statuses
    assert len(teams) <= 3, len(teams)  # one team read each: the first GitHub will not answer


async def test_an_outage_gives_an_account_without_a_role_no_free_calls(world: World) -> None:
    """GitHub answers every team read 502 (an outage): the command budget of a request that
    failed so is given back, but its role-less request stays spent, so mallory's requests that
    make the installation call GitHub are still bounded by `outsider_requests_per_hour`, then 429."""
    repository = world.github.repository(REPO)
    assert repository is not None
    repository.files[".github/railyard.yml"] += "limits:\n  outsider_requests_per_hour: 3\n"
    await world.say("rachel", "/publish")
    world.github.inject("GET", r"/teams/[^/]+/memberships/mallory$", *[Fault(status=502)] * 40)
    statuses, teams = await mallorys_claims(world, 8)
    assert statuses[:3] == [503] * 3 and set(statuses[3:]) == {429}, statuses
    assert len({c.at for c in teams}) <= 3 * 6, len(teams)


async def test_an_outage_leaves_a_runner_with_a_role_no_429_after_it(world: World) -> None:
    """cody holds runner (by the team acme/agents). GitHub answers his team read 502 twice (an
    outage; railyard agent retries each 503 with the same key). Once GitHub answers again, his
    claim applies: SPEC, strangers' budgets never refuse a caller who holds a role, and docs/api.md,
    retrying through an outage is not charged (he was seen holding a role this hour). A review
    found each failed try kept one of cody's `outsider_requests_per_hour` (2 here), so the third
    try was 429 for the rest of the hour."""
    repository = world.github.repository(REPO)
    assert repository is not None
    repository.files[".github/railyard.yml"] += "limits:\n  outsider_requests_per_hour: 2\n"
    await seen_holding_a_role(world)
    world.github.inject("GET", r"/teams/agents/memberships/cody$", Fault(status=502), Fault(status=502))
    for _ in range(2):
        assert (await command(world, "cody", "/claim", key="through-the-outage"))[0] == 503
    status, answer, headers = await command(world, "cody", "/claim", key="through-the-outage")
    assert status == 200, (status, answer, headers.get("Retry-After"))
    assert world.ticket().work.value == "claimed"
