"""`issues` events through the handlers and the in-memory fakes."""

from __future__ import annotations

import pytest

from handlers.ports import Rules
from policies.events import EventType
from policies.states import WorkState
from tests.fakes.github import user
from tests.fakes.webhooks import issue
from tests.unit.handlers.steps import KEY, NORA, claimed, published, ticket, world

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


def _edited_by(author: tuple[str, int], n: int) -> dict[str, object]:
    """`issues.edited` of #12 by `author` (the issue's author), the body toggled between two texts."""
    texts = ("Stop retrying forever.", "Stop retrying forever!")
    body, old = texts if n % 2 else texts[::-1]
    payload = issue("edited", 12)
    payload["issue"].update(
        {"title": "Retries", "body": body, "updated_at": f"2026-11-30T10:{n:02d}:00Z", "user": user(*author)}
    )
    payload["changes"] = {"body": {"from": old}}
    payload["sender"] = user(*author)
    return payload


@pytest.mark.xfail(
    strict=True,
    reason="every issues.edited by a role-less issue author records description_changed: no budget, "
    "a new revision (rev=N commands turn stale) and a status-comment rewrite each, without bound",
)
async def test_an_issue_authors_edits_cannot_jam_the_ticket() -> None:
    """The issue's author holds no role (anyone may open an issue that a requester then publishes)
    and may edit it at will: forty edits in an hour, toggling one character, must not each record
    an event, move the revision and rewrite the status comment (PR edits are bounded this way:
    docs/durability.md, *Editing a PR cannot jam a ticket*; an outsider's comments cost at most
    `limits.outsider_requests_per_hour`)."""
    ports = world()
    await claimed(ports)
    before = ticket(ports).revision
    shown = len(ports.store.records.shown)
    for n in range(40):
        await ports.dispatch("issues", _edited_by(NORA, n), delivery_id=f"d-edit-{n}")
    changed = [r for r in ports.store.history(KEY) if r.event.type is EventType.DESCRIPTION_CHANGED]
    assert len(changed) >= 1, "the edit is recorded"
    limit = Rules("v").outsider_requests_per_hour
    assert ticket(ports).revision - before <= limit, (
        f"{ticket(ports).revision - before} revisions from one role-less account's 40 edits"
    )
    writes = len(ports.store.records.shown) - shown  # each enqueues the status comment (and checks)
    assert writes <= limit, f"{writes} status-comment writes enqueued"
