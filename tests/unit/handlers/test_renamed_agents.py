"""An agent `agents:` lists by login stays an agent after it renames (SPEC *Identity*: logins
can be renamed and registered again): the account id behind a listed login is remembered when
it acts, and counts while `agents:` still lists the login.

bot-a (account 77) is listed under `agents:` and runs #12; it renames to bot-b, which holds
reviewer (a team, or the write-permission fallback), and tries to accept carol's work on #13."""

from __future__ import annotations

import pytest

from handlers.answers import Refused, Reply
from handlers.ports import RoleEntry, Rules
from policies.refusals import RefusalCode
from policies.states import Role, WorkState
from tests.fakes.configs import FakeConfigs
from tests.fakes.github import issue_answer
from tests.fakes.ports import FakePorts
from tests.fakes.roles import FakeRoles
from tests.fakes.webhooks import INSTALLATION, REPOSITORY
from tests.unit.handlers.steps import CAROL, RACHEL, answers_after, published, say, ticket, world

SHA = "b" * 40
BOT_A = ("bot-a", 77)
BOT_B = ("bot-b", 77)  # the same account, renamed
NEWCOMER = ("bot-a", 88)  # another account, which registered the login bot-a freed


def listing(*logins: str) -> Rules:
    """The rules in force with `agents:` naming these logins."""
    return Rules(policy_version="blob-sha-1", agents=tuple(RoleEntry(login=login) for login in logins))


async def delivered_13(ports: FakePorts) -> None:
    """#13 published by rachel, claimed and delivered by carol."""
    await say(ports, "/publish", by=RACHEL, number=13)
    await say(ports, "/claim", by=CAROL, number=13)
    await say(ports, "/deliver branch=agent/13 The fix.", by=CAROL, number=13)
    assert ticket(ports, 13).work is WorkState.DELIVERED


async def agent_acted_then_renamed() -> FakePorts:
    """bot-a claims #12 while listed; then, renamed bot-b, it holds reviewer; #13 awaits review."""
    ports = world(listing("bot-a"))
    ports.roles = FakeRoles(
        {
            "rachel": frozenset({Role.REQUESTER, Role.TASK_OWNER}),
            "carol": frozenset({Role.RUNNER}),
            "bot-a": frozenset({Role.RUNNER, Role.REVIEWER}),
            "bot-b": frozenset({Role.REVIEWER}),
        }
    )
    ports.github.add_issue(REPOSITORY, issue_answer(13, assignees=(RACHEL,)))
    ports.github.add_branch(REPOSITORY, "agent/13", SHA)
    ports.github.add_commit(REPOSITORY, SHA)
    await published(ports)
    await say(ports, "/claim", by=BOT_A)
    assert ticket(ports).claimant_id == BOT_A[1]
    await delivered_13(ports)
    ports.github.logins[BOT_B[1]] = "bot-b"
    return ports


def refusal_of(ports: FakePorts, before: int) -> RefusalCode | None:
    """The refusal the command after the first `before` answers was answered with, if any."""
    refused = [
        a.message.refusal.code
        for a in answers_after(ports, before)
        if isinstance(a, Reply) and isinstance(a.message, Refused)
    ]
    return refused[0] if refused else None


async def test_a_listed_agent_that_renamed_still_cannot_accept() -> None:
    """bot-a acted once while listed; renamed bot-b and a reviewer, its `/accept` is refused."""
    ports = await agent_acted_then_renamed()
    before = len(ports.store.answers)
    await say(ports, "/accept", by=BOT_B, number=13)
    assert ticket(ports, 13).work is WorkState.DELIVERED
    assert refusal_of(ports, before) is RefusalCode.AGENTS_CANNOT_ACCEPT


@pytest.mark.parametrize("agents", [(), ("other-bot",)])
async def test_a_login_taken_off_agents_no_longer_makes_its_account_an_agent(agents: tuple[str, ...]) -> None:
    """With bot-a no longer under `agents:`, account 77 (now bot-b) accepts as the reviewer it is."""
    ports = await agent_acted_then_renamed()
    ports.configs = FakeConfigs(default=listing(*agents))
    await say(ports, "/accept", by=BOT_B, number=13)
    accepted = ticket(ports, 13)
    assert accepted.work is WorkState.ACCEPTED
    assert accepted.review is not None and accepted.review.reviewer_id == BOT_B[1]


async def test_whoever_holds_a_listed_login_is_an_agent_and_the_renamed_account_stays_one() -> None:
    """The list names the login: the account that registered the freed bot-a is an agent too,
    and its acting under it does not free account 77."""
    ports = await agent_acted_then_renamed()
    ports.roles = FakeRoles({**ports.roles.by_login, "bot-a": frozenset({Role.REVIEWER})})
    before = len(ports.store.answers)
    await say(ports, "/accept", by=NEWCOMER, number=13)
    assert refusal_of(ports, before) is RefusalCode.AGENTS_CANNOT_ACCEPT
    before = len(ports.store.answers)
    await say(ports, "/accept", by=BOT_B, number=13)
    assert refusal_of(ports, before) is RefusalCode.AGENTS_CANNOT_ACCEPT
    assert ticket(ports, 13).work is WorkState.DELIVERED


async def test_an_account_is_remembered_per_installation_only_under_a_listed_login() -> None:
    """What is kept: bot-a's account under its listed login, in the installation; carol, not listed,
    leaves nothing."""
    ports = await agent_acted_then_renamed()
    assert set(ports.store.records.agents) == {(INSTALLATION, BOT_A[1], "bot-a")}
