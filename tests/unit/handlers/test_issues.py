"""`issues` events through the handlers and the in-memory fakes."""

from __future__ import annotations

from handlers.ports import Rules
from policies.events import EventType
from policies.states import WorkState
from tests.fakes.webhooks import issue
from tests.unit.handlers.steps import KEY, published, ticket, world

LABELLED = Rules("blob-sha-1", ticket_label="ticket")


async def test_the_ticket_label_makes_a_draft_once() -> None:
    """An issue labelled with the ticket label becomes one draft ticket, however often it is labelled."""
    ports = world(LABELLED)
    await ports.dispatch("issues", issue("labeled", 12, labels=("bug", "ticket")), delivery_id="d-1")
    await ports.dispatch("issues", issue("labeled", 12, labels=("ticket",)), delivery_id="d-2")
    assert ticket(ports).work is WorkState.DRAFT
    assert [recorded.event.type for recorded in ports.store.history(KEY)] == [EventType.CREATED]


async def test_without_a_label_rule_a_label_makes_nothing() -> None:
    """With no ticket label configured, labelling an issue creates no ticket."""
    ports = world()
    await ports.dispatch("issues", issue("opened", 12, labels=("ticket",)))
    assert ports.store.ticket(KEY) is None


async def test_closing_the_issue_is_recorded_and_work_does_not_move() -> None:
    """Closing a ticket's issue marks the ticket closed and leaves its work state where it was."""
    ports = world()
    await published(ports)
    await ports.dispatch("issues", issue("closed", 12), delivery_id="d-close")
    closed = ticket(ports)
    assert closed.closed and closed.work is WorkState.OPEN
    assert ports.store.history(KEY)[-1].event.type is EventType.ISSUE_CLOSED
    await ports.dispatch("issues", issue("reopened", 12), delivery_id="d-reopen")
    assert not ticket(ports).closed


async def test_closing_an_issue_that_is_no_ticket_records_nothing() -> None:
    """Closing an issue that is not a ticket leaves no ticket behind."""
    ports = world()
    await ports.dispatch("issues", issue("closed", 12))
    assert ports.store.ticket(KEY) is None
