"""What a status comment shows of a ticket (its state, its event log, its clocks), read on
PostgreSQL's event-loop connections (`read_shown_here`, what the outbox's renderer uses there),
is what the same reads through a SQLAlchemy transaction give (`read_shown`), in every state the
clocks depend on."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from sqlalchemy.engine import make_url

from app.bootstrap import wire
from app.store.compiled import MANY_ROWS
from app.store.database import Database
from app.store.signs import read_shown, read_shown_here
from handlers.ports import Heard, RecordedEvent
from policies.commands import Claim, Deliver, Publish, SendBack
from policies.model import Ticket, TicketKey
from policies.states import WorkState
from policies.watchdog import Clocks
from tests.conftest import _empty as empty
from tests.fakes import REQUESTER, REVIEWER, RUNNER, START, Comments

pytestmark = pytest.mark.postgres
KEY = TicketKey("acme/web", 77)


@pytest.fixture
def database(postgres_database: Database) -> Iterator[Database]:
    """The PostgreSQL test database, emptied, through sessions whose time zone is New York's: the
    driver then answers times in that zone, which the store must still give in UTC."""
    empty(postgres_database)
    url = make_url(postgres_database.url).update_query_dict({"options": "-c timezone=America/New_York"})
    database = Database(url.render_as_string(hide_password=False))
    yield database
    database.close()


Shown = tuple[Ticket | None, list[RecordedEvent], Clocks]


async def both(database: Database, key: TicketKey = KEY) -> tuple[Shown, Shown]:
    """The loop's reading and the transaction's, side by side."""
    return await read_shown_here(database, key), read_shown(database, key)


async def test_every_state_reads_the_same_on_the_loop_as_in_a_transaction(database: Database) -> None:
    store, comments = wire(database).store, Comments()
    here, there = await both(database)
    assert here == there == (None, [], Clocks())  # no ticket

    async with store.unit() as uow:
        await uow.execute(KEY, Publish("Resumable uploads"), comments.context(REQUESTER))
        await uow.commit()
    here, there = await both(database)
    assert here == there and here[2] == Clocks()  # open: no clock

    async with store.unit() as uow:
        await uow.execute(KEY, Claim(branch="agent/77"), comments.context(RUNNER))
        await uow.record_sign_of_life(
            Heard(KEY, 1, START + timedelta(minutes=5), "comment", "issue_comment", 60, "v1", 3, 2)
        )
        await uow.commit()
    here, there = await both(database)
    ticket, history, clocks = here
    assert here == there
    assert ticket is not None and ticket.work is WorkState.CLAIMED and len(history) == ticket.revision
    assert clocks.watch is not None and clocks.watch.last_sign_of_life == START + timedelta(minutes=5)
    assert clocks.watch.opened_at.utcoffset() == timedelta(0)  # times as the store gives them

    async with store.unit() as uow:
        deliver = Deliver("Resumable now", branch="agent/77", commit="c" * 40)
        await uow.execute(KEY, deliver, comments.context(RUNNER))
        await uow.commit()
    here, there = await both(database)
    assert here == there
    assert here[2].review is not None and here[2].review.hours == 2


async def test_a_long_log_reads_the_same_and_in_order(database: Database) -> None:
    """Past `MANY_ROWS` events the rows are turned into events on a thread, not on the loop."""
    store, comments = wire(database).store, Comments()
    async with store.unit() as uow:
        await uow.execute(KEY, Publish("Resumable uploads"), comments.context(REQUESTER))
        await uow.execute(KEY, Claim(branch="agent/77"), comments.context(RUNNER))
        for n in range(MANY_ROWS // 2 + 1):  # a delivery and a send-back: two events each
            deliver = Deliver(f"Try {n}", branch="agent/77", commit=f"{n:040x}")
            unlimited = {"attempts_per_ticket": 1000}
            assert (await uow.execute(KEY, deliver, comments.context(RUNNER, **unlimited))).applied
            assert (
                await uow.execute(KEY, SendBack("Again"), comments.context(REVIEWER, **unlimited))
            ).applied
        await uow.commit()
    here, there = await both(database)
    assert here == there and len(here[1]) > MANY_ROWS
    assert [recorded.revision for recorded in here[1]] == list(range(1, len(here[1]) + 1))
