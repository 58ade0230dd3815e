"""A refusal stored before its ticket existed (no ticket id) is told from another ticket's by
GitHub's repository id, on SQLite, PostgreSQL and in memory (the fake is held to the same rule):
retried under the repository's new name it replays; sent on a new repository that took the old
name, it is another ticket's (`elsewhere`: the API's 422); a repository railyard never
identified is compared by name, as before ids were kept."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from app.contracts.effect_types import surfaces_for
from app.store.database import Database
from app.store.tickets import TicketService
from app.store.unit import SqlStore
from app.views.replies_text import render
from handlers.ports import Outcome
from policies.commands import Context, Publish
from policies.model import Actor, TicketKey
from policies.refusals import RefusalCode
from tests.fakes.store import MemoryStore

OLD, NEW = 4242, 9999
AT = datetime(2026, 12, 7, 12, tzinfo=UTC)
KEY = Context(Actor("cody", id=5), "api:5:K", AT)  # cody holds no role: `/publish` is refused


async def place(store: Any, repository_id: int, name: str) -> None:
    async with store.unit() as uow:
        await uow.place_repository(repository_id, name, None, AT.timestamp(), None)
        await uow.commit()


async def publish(store: Any, name: str, number: int = 13) -> Outcome:
    """cody's `/publish` on `name`#`number` under the key K."""
    async with store.unit() as uow:
        outcome: Outcome = await uow.execute(TicketKey(name, number), Publish(), KEY)
        await uow.commit()
    return outcome


def refused_as_before(outcome: Outcome, *, elsewhere: bool) -> bool:
    assert outcome.refusal is not None and outcome.refusal.code is RefusalCode.NOT_ALLOWED
    return outcome.replayed and outcome.elsewhere is elsewhere


async def renamed_then_reused(store: Any) -> None:
    await place(store, OLD, "acme/app")
    first = await publish(store, "acme/app")
    assert first.refusal is not None and not first.replayed and not first.elsewhere
    await place(store, OLD, "acme/tools")  # renamed: the same repository
    assert refused_as_before(await publish(store, "acme/tools"), elsewhere=False)
    assert refused_as_before(await publish(store, "acme/tools", 14), elsewhere=True)  # another number
    await place(store, NEW, "acme/app")  # another repository takes the old name
    assert refused_as_before(await publish(store, "acme/app"), elsewhere=True)
    assert refused_as_before(await publish(store, "acme/tools"), elsewhere=False)


async def never_identified(store: Any) -> None:
    """No id was ever placed for acme/lone: its name decides, as it did before 0029."""
    assert not (await publish(store, "acme/lone")).replayed
    assert refused_as_before(await publish(store, "acme/lone"), elsewhere=False)
    assert refused_as_before(await publish(store, "acme/other"), elsewhere=True)


@pytest.mark.parametrize("scenario", [renamed_then_reused, never_identified])
async def test_in_the_database(database: Database, scenario: Any) -> None:
    store = SqlStore(database, render=render, surfaces=surfaces_for, clock=lambda: AT.timestamp())
    await scenario(store)


@pytest.mark.parametrize("scenario", [renamed_then_reused, never_identified])
async def test_in_memory(scenario: Any) -> None:
    await scenario(MemoryStore())


async def test_a_tickets_refusals_are_its_repositorys_whatever_its_name(database: Database) -> None:
    """The refused commands `railyard events` and the API's events list are the repository's by
    id: after a rename they stay with the renamed repository, and a new repository that takes the
    old name is shown none of them (its #13 is another issue)."""
    store = SqlStore(database, render=render, surfaces=surfaces_for, clock=lambda: AT.timestamp())
    await place(store, OLD, "acme/app")
    await publish(store, "acme/app")  # cody's refused `/publish` on acme/app#13
    await place(store, OLD, "acme/tools")
    await place(store, NEW, "acme/app")
    service = TicketService(database)
    assert [row["actor"] for row in service.refusals(TicketKey("acme/tools", 13))] == ["cody"]
    assert service.refusals(TicketKey("acme/app", 13)) == []
    assert [row["actor"] for row in service.refusals(TicketKey("acme/lone", 13))] == []


async def test_refusals_of_a_repository_never_identified_go_by_name(database: Database) -> None:
    store = SqlStore(database, render=render, surfaces=surfaces_for, clock=lambda: AT.timestamp())
    await publish(store, "acme/lone")
    service = TicketService(database)
    assert [row["actor"] for row in service.refusals(TicketKey("acme/lone", 13))] == ["cody"]
    assert service.refusals(TicketKey("acme/lone", 14)) == []
