"""The release owner's listing on SQLite and PostgreSQL: filters, order, pages, one statement a page,
the record facts attention reads, and the report's period events."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

from sqlalchemy import event

from app.store.database import Database
from app.store.listing import Cursor, Listing, list_tickets
from app.store.tickets import TicketService
from policies.attention import attention
from policies.commands import Accept, Claim, Deliver, Publish, SendBack
from policies.model import TicketKey
from policies.notices import WATCHDOG_ACTOR, NoticeContext, OverdueObserved, overdue_operation_id
from policies.rails import ObservationContext, PullRequestObserved
from policies.states import WorkState
from tests.fakes import REQUESTER, REVIEWER, RUNNER, Comments

REPO = "acme/web"


@contextmanager
def statements(database: Database) -> Iterator[list[str]]:
    """Every SQL statement the engine runs inside the block."""
    seen: list[str] = []

    def count(conn: object, cursor: object, statement: str, *args: object) -> None:
        seen.append(statement)

    event.listen(database.engine, "before_cursor_execute", count)
    try:
        yield seen
    finally:
        event.remove(database.engine, "before_cursor_execute", count)


def publish(service: TicketService, comments: Comments, number: int, repository: str = REPO) -> TicketKey:
    """Publish ticket `number`; return its key."""
    key = TicketKey(repository, number)
    assert service.execute(key, Publish("Describe the work"), comments.context(REQUESTER)).applied
    return key


def deliver(service: TicketService, comments: Comments, key: TicketKey, commit: str) -> None:
    """Claim and deliver `key` at `commit`."""
    assert service.execute(key, Claim(), comments.context(RUNNER)).applied
    assert service.execute(key, Deliver("Done", commit=commit), comments.context(RUNNER)).applied


def merge(service: TicketService, comments: Comments, key: TicketKey, head: str) -> None:
    """A linked PR with head `head` merged."""
    at = comments.clock()
    pull = PullRequestObserved(5, "https://x/pull/5", True, False, True, head, "b", "m" * 40, at, True)
    assert service.execute(key, pull, ObservationContext("github", f"merge-{key.number}", at)).events


def test_pages_are_newest_activity_first_and_filtered(database: Database) -> None:
    """Tickets come newest activity first, only of the repository and work states asked for."""
    service, comments = TicketService(database), Comments()
    keys = [publish(service, comments, n) for n in range(1, 6)]
    publish(service, comments, 9, "acme/api")
    assert service.execute(keys[1], Claim(), comments.context(RUNNER)).applied
    listing = Listing(database)
    page = listing.page(repository="ACME/Web", count=True)
    assert [item.ticket.key.number for item in page.items] == [2, 5, 4, 3, 1]
    assert page.total == 5
    claimed = listing.page(repository=REPO, work=[WorkState.CLAIMED], count=True)
    assert [item.ticket.key.number for item in claimed.items] == [2] and claimed.total == 1
    assert len(listing.page().items) == 6
    assert listing.repositories() == [("acme/api", 1), ("acme/web", 5)]


def test_offset_and_keyset_pages_cover_every_ticket_once(database: Database) -> None:
    """Paging by offset or by cursor visits every ticket exactly once, in order."""
    service, comments = TicketService(database), Comments()
    for n in range(1, 12):
        publish(service, comments, n)
    listing = Listing(database)
    by_offset = [i.ticket.key.number for o in (0, 4, 8) for i in listing.page(limit=4, offset=o).items]
    assert by_offset == list(range(11, 0, -1))
    assert [i.ticket.key.number for i in listing.every(size=3)] == list(range(11, 0, -1))
    first = listing.page(limit=4)
    assert first.next is not None and Cursor.parse(first.next.token()) == first.next
    second = listing.page(limit=4, after=first.next)
    assert [i.ticket.key.number for i in second.items] == [7, 6, 5, 4]


def test_a_page_is_one_statement_and_the_count_one_more(database: Database) -> None:
    """However many tickets, one page is read in one statement (two with the count)."""
    service, comments = TicketService(database), Comments()
    for n in range(1, 30):
        deliver(service, comments, publish(service, comments, n), f"{n:040x}")
    with database.read() as connection, statements(database) as seen:
        page = list_tickets(connection, repository=REPO, limit=25)
    assert len(page.items) == 25 and len(seen) == 1
    with database.read() as connection, statements(database) as seen:
        list_tickets(connection, repository=REPO, limit=25, count=True)
    assert len(seen) == 2


def test_the_listing_carries_the_watchdogs_record_and_signs_of_life(database: Database) -> None:
    """A recorded `claim_overdue` of the current attempt reaches the page and flags the ticket."""
    service, comments = TicketService(database), Comments()
    key = publish(service, comments, 3)
    claimed = service.execute(key, Claim(check_in_minutes=30), comments.context(RUNNER)).events[0].at
    later = claimed + timedelta(hours=2)
    notice = OverdueObserved(1, RUNNER.login, claimed, 30)
    op = overdue_operation_id(REPO, 3, 1, claimed)
    assert service.execute(key, notice, NoticeContext(WATCHDOG_ACTOR, op, later)).events
    (item,) = Listing(database).page(repository=REPO).items
    assert item.facts.overdue is not None and item.facts.overdue.attempt == 1
    assert item.facts.overdue.silent_since == claimed
    assert "claim_overdue" in attention(item.ticket, item.facts, later)


def test_a_merge_without_acceptance_is_flagged_from_the_page(database: Database) -> None:
    """A delivered ticket whose linked PR merged is `merged_not_accepted` and `awaiting_review`."""
    service, comments = TicketService(database), Comments()
    key = publish(service, comments, 4)
    deliver(service, comments, key, "a" * 40)
    merge(service, comments, key, "a" * 40)
    (item,) = Listing(database).page(repository=REPO).items
    assert attention(item.ticket, item.facts, datetime.now(UTC)) == ["merged_not_accepted", "awaiting_review"]


def test_period_events_feed_a_report_of_a_send_back_round_trip(database: Database) -> None:
    """Two deliveries, one sent back, one accepted: the runner's figures and the reviewer's decisions."""
    service, comments = TicketService(database), Comments()
    key = publish(service, comments, 6)
    deliver(service, comments, key, "a" * 40)
    assert service.execute(key, SendBack("Tests fail"), comments.context(REVIEWER)).applied
    assert service.execute(key, Deliver("Fixed", commit="b" * 40), comments.context(RUNNER)).applied
    assert service.execute(key, Accept(), comments.context(REVIEWER)).applied
    figures = Listing(database).report(repository=REPO).to_json()
    (runner,) = figures["runners"]
    assert (runner["runner"], runner["deliveries"], runner["sent_back"], runner["accepted"]) == (
        RUNNER.login, 2, 1, 1,
    )  # fmt: skip
    assert runner["send_back_rate"] == 0.5
    (reviewer,) = figures["reviewers"]
    assert (reviewer["reviewer"], reviewer["accepted"], reviewer["sent_back"]) == (REVIEWER.login, 1, 1)
    future = datetime.now(UTC) + timedelta(days=400)
    assert not any(Listing(database).report(since=future).to_json().values())


def test_config_error_follows_the_repositorys_latest_command(database: Database) -> None:
    """A command refused for a broken config flags every ticket of the repository, not others;
    a stale-revision refusal proves nothing; the next command that passes clears it."""
    service, comments = TicketService(database), Comments()
    first, second = publish(service, comments, 1), publish(service, comments, 2)
    elsewhere = publish(service, comments, 3, "acme/api")
    broken = comments.context(RUNNER, config_error="roles.runner: not a list")
    assert service.execute(first, Claim(), broken).refusal is not None
    stale = service.execute(second, Claim(), comments.context(RUNNER), expected_revision=99)
    assert stale.refusal is not None and stale.refusal.code.value == "stale_revision"

    def flagged() -> dict[str, bool]:
        return {str(i.ticket.key): i.facts.config_refused for i in Listing(database).page().items}

    assert flagged() == {str(first): True, str(second): True, str(elsewhere): False}
    assert service.execute(second, Claim(), comments.context(RUNNER)).applied
    assert flagged() == {str(first): False, str(second): False, str(elsewhere): False}
