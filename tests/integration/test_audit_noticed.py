"""`railyard audit verify` after migration 0031: snapshots written before tickets noted their
overdue periods (`Ticket.noticed`) get the note their events make, so an untouched upgraded
database verifies."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, timedelta

import pytest
from alembic import command
from sqlalchemy import select, update

from app.store import audit_log as audit_store
from app.store.database import Database, alembic_config
from app.store.tickets import TicketService
from policies.commands import Claim, Publish
from policies.notices import WATCHDOG_ACTOR, NoticeContext, OverdueObserved, overdue_operation_id
from support.databases import migrated_back_to
from tests.fakes import REQUESTER, RUNNER, Comments
from tests.integration.test_audit import KEY, tickets


@pytest.fixture
def before_0031(database: Database) -> Iterator[Database]:
    """The database at 0030, before snapshots noted their overdue periods, back to head afterwards."""
    with migrated_back_to(database, "0030"):
        yield database


def test_a_snapshot_from_before_noticed_existed_still_verifies(before_0031: Database) -> None:
    """acme/web#12 claimed, then recorded `claim_overdue` by a railyard older than `noticed`: its
    snapshot has no `noticed` (nothing was edited). The migration notes the period its events
    record, so verify does not call the row tampered with, and the period is known after it."""
    database = before_0031
    service, comments = TicketService(database), Comments()
    assert service.execute(KEY, Publish("Fix the upload"), comments.context(REQUESTER)).applied
    claimed = service.execute(KEY, Claim(check_in_minutes=30), comments.context(RUNNER)).events[0].at
    notice = OverdueObserved(1, RUNNER.login, claimed, 30)
    op = overdue_operation_id(KEY.repository, KEY.number, 1, claimed)
    later = claimed + timedelta(hours=2)
    assert service.execute(KEY, notice, NoticeContext(WATCHDOG_ACTOR, op, later)).events
    with database.write() as connection:  # the row as the older railyard wrote it: no `noticed`
        row = connection.execute(select(tickets.c.id, tickets.c.snapshot)).one()
        older = {k: v for k, v in row.snapshot.items() if k != "noticed"}
        connection.execute(update(tickets).where(tickets.c.id == row.id).values(snapshot=older))
    command.upgrade(alembic_config(database.url), "head")
    found = audit_store.verify(database)
    assert (found.broken_ticket, found.differs) == (None, ())
    ticket = service.load(KEY)
    assert ticket is not None and ticket.noticed == (f"silence:1:{claimed.astimezone(UTC).isoformat()}",)
