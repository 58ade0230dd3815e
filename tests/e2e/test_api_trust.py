"""What strangers can do to everyone else through the API (SPEC *Answers that cannot be forged or
jammed*): role-less accounts and made-up tokens spend budgets of their own, never a role holder's."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
from sqlalchemy import text

from app.web.api_routes import AGENT_API
from policies.budgets import Budget
from support.world import REPO, World
from tests.e2e.test_api import TICKETS, call, command, installation_calls, token


def outsider_limit(world: World, limit: int) -> None:
    """Set `limits.outsider_requests_per_hour` in acme/web's configuration file."""
    repository = world.github.repository(REPO)
    assert repository is not None
    repository.files[".github/railyard.yml"] += f"limits:\n  outsider_requests_per_hour: {limit}\n"


async def test_role_less_accounts_spending_the_shared_budget_never_lock_out_a_runner(world: World) -> None:
    """Ten throwaway accounts spend all outsiders' budget with refused claims: a runner still
    claims, and a stranger found to hold no role is refused without a call until its roles may
    be asked in full again, ten minutes after they were."""
    outsider_limit(world, 3)
    await world.say("rachel", "/publish")
    cody = token(world, "cody")  # a runner
    for n in range(10):
        stranger = token(world, f"stranger{n}")
        assert [(await command(world, stranger, "/claim"))[0] for _ in range(3)] == [403] * 3
    status, answer, _ = await command(world, cody, "/claim")
    assert status == 200, answer
    late = token(world, "stranger10")
    assert (await command(world, late, "/claim"))[0] in (403, 409)  # its first: its roles are asked
    await world.outbox_settled()  # the runner's claim's own writes (its assignment) are done
    before = len(world.github.calls)
    status, answer, _ = await command(world, late, "/claim")  # the shared budget and its ten minutes spent
    assert (status, answer["error"]["code"]) == (429, "over_budget")
    assert installation_calls(world, before) == []


async def test_concurrent_requests_by_one_outsider_get_at_most_its_share_of_role_checks(world: World) -> None:
    """Twenty claims sent at once by one new role-less account: three are role-checked (each asks
    every role list's team, none found: the six of this configuration), the rest 429."""
    outsider_limit(world, 3)
    await world.say("rachel", "/publish")
    mallory = token(world, "mallory")
    before = len(world.github.calls)
    answers = await asyncio.gather(*(command(world, mallory, "/claim") for _ in range(20)))
    statuses = sorted(status for status, _, _ in answers)
    assert statuses == [403] * 3 + [429] * 17
    role_checks = [c for c in installation_calls(world, before) if c.path.endswith("/mallory")]
    assert len(role_checks) <= 3 * 6  # the runner's team, then every other role's: none held


async def test_made_up_tokens_from_one_address_never_refuse_a_real_token_from_another(
    world: World, monkeypatch: Any
) -> None:
    """A flood of made-up tokens spends its own address's checks: a runner's new token, from another
    address, reads at its first call, and a token accepted before the flood reads from the flood's."""
    await world.say("rachel", "/publish")
    known = token(world, "rita")
    assert (await call(world, known, "GET", f"{TICKETS}/12"))[0] == 200
    checks = world.server.app[AGENT_API].costs.tokens
    monkeypatch.setattr(checks.new, "budget", Budget("new tokens", 5, 60.0))
    flood = [(await call(world, f"ghp_madeup{n}", "GET", f"{TICKETS}/12"))[0] for n in range(20)]
    assert flood[:4] == [401] * 4 and flood[-1] == 429  # rita's first call spent one check
    headers = {"Authorization": f"Bearer {token(world, 'cody')}"}
    elsewhere = aiohttp.TCPConnector(local_addr=("127.0.0.2", 0))  # another machine, as the server sees it
    async with aiohttp.ClientSession(world.server.url, connector=elsewhere) as client:
        async with client.get(f"{TICKETS}/12", headers=headers) as response:
            assert response.status == 200, await response.text()
    assert (await call(world, known, "GET", f"{TICKETS}/12"))[0] == 200


async def test_naming_repositories_the_app_is_not_installed_on_keeps_nothing_of_them(world: World) -> None:
    """An account reading the tickets of public repositories railyard does not serve gets 404, and
    nothing GitHub said about them is kept in the shared HTTP cache (whose oldest entries, the
    installation's conditional reads among them, such rows would push out)."""
    for n in range(5):
        world.github.add_repository(f"octo/public-{n}")
    stranger = token(world, "mallory")
    assert (await call(world, stranger, "GET", "/api/v1/repos/octo/public-0/tickets"))[0] == 404
    with world.database.read() as connection:
        before = connection.execute(text("SELECT count(*) FROM http_cache")).scalar()
    for n in range(1, 5):
        status, answer, _ = await call(world, stranger, "GET", f"/api/v1/repos/octo/public-{n}/tickets")
        assert (status, answer["error"]["code"]) == (404, "no_such_repository")
    with world.database.read() as connection:
        after = connection.execute(text("SELECT count(*) FROM http_cache")).scalar()
        kept = connection.execute(text("SELECT url FROM http_cache WHERE url LIKE '%octo/public%'")).all()
    assert after == before and kept == []


async def test_an_organization_member_without_a_role_costs_at_most_one_call_per_request(world: World) -> None:
    """SPEC: an account without a role can cause at most one installation-token call per request.
    An acme member in none of the runner role's four teams sends /claim again and again: once it
    is known to hold no role, each request costs GitHub at most one call (not one per team)."""
    repository = world.github.repository(REPO)
    assert repository is not None
    repository.files[".github/railyard.yml"] = repository.files[".github/railyard.yml"].replace(
        'runner: ["@acme/agents", "coder-bot[bot]"]',
        'runner: ["@acme/agents", "@acme/ml", "@acme/contractors", "@acme/ops"]',
    )
    await world.say("rachel", "/publish")
    world.github.org_members.add(("acme", "olga"))  # a member of the organization, in no such team
    olga, costs = token(world, "olga"), []
    for _ in range(4):
        before = len(world.github.calls)
        assert (await command(world, olga, "/claim"))[0] == 403
        costs.append(len(installation_calls(world, before)))
    print("installation calls per request:", costs)  # today [4, 5, 5, 5]
    assert max(costs[1:]) <= 1
