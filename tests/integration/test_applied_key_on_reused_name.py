"""An API key whose operation was applied on a ticket (its row kept in `operations`), sent
again once its kept answer was pruned, on a new repository that took the renamed repository's
name: another ticket's, so `elsewhere` (the API's 422), never applied a second time under the
same key (docs/api.md: "the key sent then for another ticket is still 422")."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from app.contracts.effect_types import surfaces_for
from app.store.database import Database
from app.store.unit import SqlStore
from app.views.replies_text import render
from handlers.ports import Outcome
from policies.commands import Context, Draft
from policies.model import Actor, TicketKey
from tests.fakes.store import MemoryStore

OLD, NEW = 4242, 9999
AT = datetime(2026, 12, 7, 12, tzinfo=UTC)
KEY = Context(Actor("rachel", id=1), "api:1:K", AT)


async def place(store: Any, repository_id: int, name: str) -> None:
    async with store.unit() as uow:
        await uow.place_repository(repository_id, name, None, AT.timestamp(), None)
        await uow.commit()


async def draft(store: Any, name: str) -> Outcome:
    async with store.unit() as uow:
        outcome: Outcome = await uow.execute(TicketKey(name, 13), Draft(via_label=True), KEY)
        await uow.commit()
    return outcome


async def applied_then_reused(store: Any) -> None:
    await place(store, OLD, "acme/app")
    first = await draft(store, "acme/app")
    assert first.refusal is None and first.events and not first.replayed
    await place(store, OLD, "acme/tools")  # renamed: the ticket row moves with it
    again = await draft(store, "acme/tools")
    assert again.replayed and not again.elsewhere
    await place(store, NEW, "acme/app")  # another repository takes the old name
    reused = await draft(store, "acme/app")
    assert reused.replayed and reused.elsewhere, "the key's operation was applied a second time"
    async with store.read() as reads:
        assert await reads.ticket(TicketKey("acme/app", 13)) is None


async def test_in_the_database(database: Database) -> None:
    store = SqlStore(database, render=render, surfaces=surfaces_for, clock=lambda: AT.timestamp())
    try:
        await applied_then_reused(store)
    finally:
        store.close()


async def test_in_memory() -> None:
    await applied_then_reused(MemoryStore())
