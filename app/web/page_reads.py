"""What the ticket pages read: their query strings, parsed leniently (anything unknown is no
filter), and the record, read off the event loop (`asyncio.to_thread`).

The board's keyset pages hold 50 tickets (one listing statement a page); an attention filter
reads pages of 500 until it has 50 that carry the code, or gives up after 20 of them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from app.store.listing import Cursor, Listed, Listing, Page
from app.store.repositories import holds
from app.store.tickets import TicketService
from app.views.pages.board import Board
from handlers.ports import RecordedEvent
from policies.attention import CODES, attention
from policies.model import Ticket, TicketKey
from policies.report_figures import Report
from policies.states import WorkState

PAGE_SIZE = 50
_ATTENTION_SCAN = 20  # pages of 500 read at most to fill one page of an attention filter


@dataclass(frozen=True)
class Reads:
    """What the pages read from the record."""

    listing: Listing
    tickets: TicketService


async def is_ours(listing: Listing, name: str, repository_id: int) -> bool:
    """Whether what railyard keeps under `name` is about the repository GitHub now calls that
    (`repository_id`, from the reader's own `GET /repos` or installation list): a name renamed
    away and reused by another repository shows nothing of the old one."""
    return await asyncio.to_thread(holds, listing.database, name, repository_id)


async def read_page(
    listing: Listing, repository: str, work: WorkState | None, code: str, after: Cursor | None
) -> tuple[list[tuple[Listed, list[str]]], Cursor | None, int | None]:
    """Up to PAGE_SIZE tickets with their codes, the next page's cursor, the total (unfiltered by code)."""
    now = datetime.now(UTC)
    states = [work] if work is not None else None
    if not code:
        page: Page = await asyncio.to_thread(
            listing.page, repository=repository, work=states, limit=PAGE_SIZE, after=after, count=True
        )
        return [(i, attention(i.ticket, i.facts, now)) for i in page.items], page.next, page.total
    found: list[tuple[Listed, list[str]]] = []
    for _ in range(_ATTENTION_SCAN):
        page = await asyncio.to_thread(
            listing.page, repository=repository, work=states, limit=500, after=after
        )
        for item in page.items:
            codes = attention(item.ticket, item.facts, now)
            if code in codes:
                found.append((item, codes))
            if len(found) == PAGE_SIZE:
                return found, Cursor(item.updated_at, item.row_id), None
        if page.next is None:
            return found, None, None
        after = page.next
    return found, after, None


async def read_board(listing: Listing, repository: str, query: Mapping[str, str]) -> Board:
    """The board of `repository` for the query string's filters (`work`, `attention`) and page (`after`)."""
    work_text, code = query.get("work", ""), query.get("attention", "")
    work = WorkState(work_text) if work_text in {s.value for s in WorkState} else None
    code = code if code in CODES else ""
    try:
        after = Cursor.parse(query["after"]) if query.get("after") else None
    except ValueError:
        after = None
    items, following, total = await read_page(listing, repository, work, code, after)
    return Board(
        repository,
        items,
        datetime.now(UTC),
        work=work,
        code=code,
        total=total,
        work_asked=work_text,
        newer=after is not None,
        older=following.token() if following is not None else None,
    )


async def read_ticket(
    service: TicketService, key: TicketKey
) -> tuple[Ticket, Sequence[RecordedEvent]] | None:
    """The ticket and its event log, or None when the issue is not a ticket."""
    ticket = await asyncio.to_thread(service.load, key)
    if ticket is None or ticket.work is None:
        return None
    return ticket, await asyncio.to_thread(service.history, key)


def parse_since(text: str) -> datetime | None:
    """`since=YYYY-MM-DD` as midnight UTC; anything else is no lower bound."""
    try:
        return datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC) if text else None
    except ValueError:
        return None


async def read_report(listing: Listing, repository: str, since: datetime | None) -> Report:
    """The report of `repository` from `since` (None: the whole record)."""
    return await asyncio.to_thread(listing.report, repository, since)
