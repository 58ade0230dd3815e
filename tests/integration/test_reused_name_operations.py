"""Operation ids that spell a repository's name, on SQLite and PostgreSQL: after the name is
renamed away and reused by another repository, a stored operation replays only for the ticket
it was recorded for (the `tickets` row), so the new repository's labelled issue becomes a ticket,
once, and the old ticket's operation still replays for it under its new name."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from app.contracts.effect_types import surfaces_for
from app.store.database import Database
from app.store.tables import OperationRow, table
from app.store.unit import SqlStore
from app.views.replies_text import render
from handlers.ports import Rules
from policies.commands import Context, Draft
from policies.model import Actor, TicketKey
from tests.fakes.webhooks import REPOSITORY, issue
from tests.unit.handlers.steps import world
from tests.unit.handlers.test_repositories import NEW, OLD, of, renamed

HERE, MOVED = TicketKey(REPOSITORY, 12), TicketKey("acme/tools", 12)
LABEL_ID = f"ticket-label:{REPOSITORY}#12"


async def test_the_ticket_label_in_a_repository_that_reuses_a_name_makes_a_ticket_once(
    database: Database,
) -> None:
    ports = world(Rules("blob-sha-1", ticket_label="ticket"))
    store = SqlStore(database, render=render, surfaces=surfaces_for, clock=ports.clock)
    services = replace(ports.services, store=store)
    try:
        labelled = of(OLD, issue("labeled", 12, labels=("ticket",)))
        await ports.dispatch("issues", labelled, delivery_id="d-1", services=services)
        ports.github.names[OLD] = "acme/tools"
        moved = renamed(OLD, REPOSITORY, "acme/tools")
        await ports.dispatch("repository", moved, delivery_id="d-2", services=services)
        async with store.read() as reads:
            old_history = await reads.history(MOVED)
        assert old_history

        for delivery in ("d-3", "d-3", "d-4"):  # the label, its redelivery, the label again
            labelled = of(NEW, issue("labeled", 12, labels=("ticket",)))
            await ports.dispatch("issues", labelled, delivery_id=delivery, services=services)
            async with store.read() as reads:
                assert await reads.ticket(HERE) is not None
                assert [r.event.type for r in await reads.history(HERE)] == [
                    r.event.type for r in old_history
                ]
                assert await reads.history(MOVED) == old_history

        # The old operation's id still replays for the old ticket, under its new name.
        context = Context(Actor("rachel", id=1), LABEL_ID, datetime.fromtimestamp(ports.clock(), UTC))
        async with store.unit() as uow:
            outcome = await uow.execute(MOVED, Draft(via_label=True), context)
            await uow.commit()
        assert outcome.replayed
        async with store.read() as reads:
            assert await reads.history(MOVED) == old_history
        with database.read() as connection:
            ids = connection.execute(table(OperationRow).select()).mappings().all()
        labels = sorted(row["operation_id"] for row in ids if row["operation_id"].startswith("ticket-label:"))
        assert labels == [LABEL_ID, f"{LABEL_ID}@{NEW}"]
    finally:
        store.close()
