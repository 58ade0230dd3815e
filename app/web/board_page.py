"""`/tickets/{owner}/{repo}`: the board. Columns by work state, the repository and deployment
rails and the attention flags on every card, each ticket's age; filters by work state and
attention code in the query string; keyset pages of 50 (one listing statement a page).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from urllib.parse import urlencode

from aiohttp import web
from markupsafe import Markup

from app.store.listing import Cursor, Listed, Listing, Page
from app.views.attention import CODES, attention
from app.web.access import Readable
from app.web.pages import document, html_response
from policies.states import WorkState

PAGE_SIZE = 50
_ATTENTION_SCAN = 20  # pages of 500 read at most to fill one page of an attention filter


def words(value: str) -> str:
    """A state or code as words: `pull_request_open` -> `pull request open`."""
    return value.replace("_", " ")


def age(since: datetime, now: datetime) -> str:
    """A short age: 5 min, 3 h, 12 d."""
    seconds = max(0.0, (now - since).total_seconds())
    if seconds < 3600:
        return f"{int(seconds // 60)} min"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h"
    return f"{int(seconds // 86400)} d"


def rails(listed_ticket: Listed) -> Markup:
    """The repository and deployment rails of a card."""
    ticket = listed_ticket.ticket
    return Markup(
        '<ul class="rails" aria-label="rails"><li class="rail">repository: {}</li>'
        '<li class="rail">deployment: {}</li></ul>'
    ).format(words(ticket.rails.integration.value), words(ticket.rails.deployment.value))


def card(repository: str, item: Listed, codes: list[str], now: datetime) -> Markup:
    """One ticket's card: number, who holds it, rails, flags, age."""
    ticket = item.ticket
    holder = ticket.claimant or ticket.owner
    flags = Markup("").join(Markup('<span class="flag">{}</span>').format(words(code)) for code in codes)
    return Markup(
        '<li class="card"><h3><a href="/tickets/{}/{}">#{}</a></h3>{}{}{}<p class="muted">{}age {}</p></li>'
    ).format(
        repository,
        ticket.key.number,
        ticket.key.number,
        rails(item),
        Markup('<p class="flags">{}</p>').format(flags) if codes else "",
        Markup('<p class="muted">closed on GitHub</p>') if ticket.closed else "",
        f"{holder} · " if holder else "",
        age(item.created_at, now),
    )


def filters(repository: str, work: str, code: str) -> Markup:
    """The filter form (GET, so a filtered board is a link)."""
    work_options = Markup("").join(
        Markup('<option value="{}"{}>{}</option>').format(
            s.value, Markup(" selected") if s.value == work else "", s.value
        )
        for s in WorkState
    )
    code_options = Markup("").join(
        Markup('<option value="{}"{}>{}</option>').format(
            c, Markup(" selected") if c == code else "", words(c)
        )
        for c in CODES
    )
    return Markup(
        '<form class="filters" method="get" action="/tickets/{}" role="search">'
        '<label for="work">Work state<select id="work" name="work">'
        '<option value="">any</option>{}</select></label>'
        '<label for="attention">Needs attention<select id="attention" name="attention">'
        '<option value="">any</option>{}</select></label>'
        '<button type="submit">Filter</button> <a href="/tickets/{}">Clear</a></form>'
    ).format(repository, work_options, code_options, repository)


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


async def board(
    request: web.Request, listing: Listing, readable: Readable, who: dict[str, str]
) -> web.Response:
    """The board of `readable`'s repository (the caller has checked the person may read it)."""
    query = request.query
    work_text, code = query.get("work", ""), query.get("attention", "")
    work = WorkState(work_text) if work_text in {s.value for s in WorkState} else None
    code = code if code in CODES else ""
    try:
        after = Cursor.parse(query["after"]) if query.get("after") else None
    except ValueError:
        after = None
    items, following, total = await read_page(listing, readable.full_name, work, code, after)
    now = datetime.now(UTC)
    name = readable.full_name
    columns = Markup("").join(
        _column(name, state, [(i, c) for i, c in items if i.ticket.work is state], now)
        for state in WorkState
        if work is None or state is work
    )
    counted = (
        Markup('<p class="muted">{} tickets{}</p>').format(total, " match" if work else "")
        if total is not None
        else ""
    )
    body = Markup(
        '<h1>{}</h1><nav class="pages" aria-label="repository"><a href="/tickets/{}/report">Report</a></nav>'
        '{}{}<div class="board">{}</div>{}'
    ).format(
        name,
        name,
        filters(name, work.value if work else "", code),
        counted,
        columns,
        _pager(name, work_text, code, after, following),
    )
    return html_response(document(f"{name} board", body, **who))


def _column(
    repository: str, state: WorkState, items: list[tuple[Listed, list[str]]], now: datetime
) -> Markup:
    cards = Markup("").join(card(repository, item, codes, now) for item, codes in items)
    return Markup(
        '<section class="column" aria-labelledby="col-{}">'
        '<h2 id="col-{}">{} <span class="muted">({})</span></h2>'
        '<ul class="cards">{}</ul></section>'
    ).format(
        state.value,
        state.value,
        words(state.value),
        len(items),
        cards or Markup('<li class="muted">none</li>'),
    )


def _pager(repository: str, work: str, code: str, after: Cursor | None, following: Cursor | None) -> Markup:
    keep = {k: v for k, v in (("work", work), ("attention", code)) if v}
    links = []
    if after is not None:
        links.append(Markup('<a href="/tickets/{}?{}">Newest</a>').format(repository, urlencode(keep)))
    if following is not None:
        target = urlencode(keep | {"after": following.token()})
        links.append(
            Markup('<a href="/tickets/{}?{}" rel="next">Older tickets</a>').format(repository, target)
        )
    return (
        Markup('<nav class="pages" aria-label="pages">{}</nav>').format(Markup(" ").join(links))
        if links
        else Markup("")
    )
