"""The accounts seen acting under a login `agents:` lists (`agent_accounts`), on SQLite and
PostgreSQL: kept with the unit, once, per installation; and a listed agent that renamed is
still refused `/accept` when the record is the SQL store."""

from __future__ import annotations

from dataclasses import replace

from sqlalchemy import select

from app.bootstrap import wire
from app.contracts.effect_types import surfaces_for
from app.store.agent_accounts import agent_accounts
from app.store.database import Database
from app.store.tickets import TicketService, operations
from app.store.unit import SqlStore
from app.views.replies_text import render
from handlers.ports import RoleEntry, Rules, Services
from policies.model import TicketKey
from policies.states import Role, WorkState
from tests.fakes.github import issue_answer
from tests.fakes.ports import FakePorts
from tests.fakes.roles import FakeRoles
from tests.fakes.webhooks import REPOSITORY, comment
from tests.unit.handlers.steps import CAROL, RACHEL, world

SHA = "b" * 40


async def test_an_account_is_kept_under_a_listed_login_only_with_its_unit(database: Database) -> None:
    """Without commit nothing is kept; with it, the login reads back (casefolded) for that
    account in that installation only."""
    store = wire(database).store
    async with store.unit() as uow:
        await uow.remember_agent(7, "Bot-A", 77, 1000.0)
    async with store.read() as reads:
        assert await reads.agent_logins(7, 77) == set()
    async with store.unit() as uow:
        await uow.remember_agent(7, "Bot-A", 77, 1000.0)
        await uow.commit()
    async with store.read() as reads:
        assert await reads.agent_logins(7, 77) == {"bot-a"}
        assert await reads.agent_logins(8, 77) == set()  # another installation knows nothing of it
        assert await reads.agent_logins(7, 88) == set()


async def test_an_account_is_kept_once_and_a_login_may_have_had_several_accounts(database: Database) -> None:
    """Acting again under a kept login writes nothing (the first time stays); another account
    under the same login, or the same account under another listed login, adds its own row."""
    store = wire(database).store
    for login, account, at in [("bot-a", 77, 1000.0), ("bot-a", 77, 2000.0), ("bot-a", 88, 3000.0)]:
        async with store.unit() as uow:
            await uow.remember_agent(7, login, account, at)
            await uow.commit()
    async with store.unit() as uow:
        await uow.remember_agent(7, "helper", 77, 4000.0)
        await uow.commit()
    async with store.read() as reads:
        assert await reads.agent_logins(7, 77) == {"bot-a", "helper"}
        assert await reads.agent_logins(7, 88) == {"bot-a"}
    with database.read() as connection:
        rows = connection.execute(
            select(agent_accounts.c.account_id, agent_accounts.c.login, agent_accounts.c.seen_at)
        ).all()
    assert sorted(tuple(row) for row in rows) == [
        (77, "bot-a", 1000.0),
        (77, "helper", 4000.0),
        (88, "bot-a", 3000.0),
    ]


async def say(
    ports: FakePorts, services: Services, comment_id: int, body: str, by: tuple[str, int], number: int
) -> None:
    """A comment through the given services."""
    payload = comment(number, body, author=by, comment_id=comment_id, created_at="2026-11-30T10:00:00Z")
    await ports.dispatch("issue_comment", payload, services=services)


async def test_a_listed_agent_that_renamed_is_refused_acceptance_on_the_sql_store(database: Database) -> None:
    """bot-a (77), listed under `agents:`, claims #12; renamed bot-b and a reviewer, its
    `/accept` of carol's #13 is refused `agents_cannot_accept`, in another process's terms: the
    account was remembered in the database, not in memory."""
    ports = world(Rules(policy_version="blob-sha-1", agents=(RoleEntry(login="bot-a"),)))
    ports.roles = FakeRoles(
        {
            "rachel": frozenset({Role.REQUESTER, Role.TASK_OWNER}),
            "carol": frozenset({Role.RUNNER}),
            "bot-a": frozenset({Role.RUNNER}),
            "bot-b": frozenset({Role.REVIEWER}),
        }
    )
    ports.github.add_issue(REPOSITORY, issue_answer(13, assignees=(RACHEL,)))
    ports.github.add_branch(REPOSITORY, "agent/13", SHA)
    ports.github.add_commit(REPOSITORY, SHA)
    first = SqlStore(database, render=render, surfaces=surfaces_for, clock=ports.clock)
    services = replace(ports.services, store=first)
    try:
        await say(ports, services, 1, "/publish", RACHEL, 12)
        await say(ports, services, 2, "/claim", ("bot-a", 77), 12)
        await say(ports, services, 3, "/publish", RACHEL, 13)
        await say(ports, services, 4, "/claim", CAROL, 13)
        await say(ports, services, 5, "/deliver branch=agent/13 The fix.", CAROL, 13)
    finally:
        first.close()
    second = SqlStore(database, render=render, surfaces=surfaces_for, clock=ports.clock)  # a restart
    try:
        await say(ports, replace(ports.services, store=second), 6, "/accept", ("bot-b", 77), 13)
    finally:
        second.close()
    found = TicketService(database).load(TicketKey(REPOSITORY.casefold(), 13))
    assert found is not None and found.work is WorkState.DELIVERED
    with database.read() as connection:
        code = connection.execute(
            select(operations.c.refusal_code).where(operations.c.operation_id == "6")
        ).scalar_one()
    assert code == "agents_cannot_accept"
