"""The board of one repository: columns by work state, the repository and deployment rails and
the attention flags on every card, each ticket's age, the filter form and the page links."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol
from urllib.parse import urlencode

from markupsafe import Markup

from app.views.pages.document import document, words
from policies.attention import CODES
from policies.model import Ticket
from policies.states import WorkState


class Listed(Protocol):
    """One ticket of a board page (the store's `Listed` is one)."""

    @property
    def ticket(self) -> Ticket:
        """The ticket as recorded."""
        ...

    @property
    def created_at(self) -> datetime:
        """When the record of it began."""
        ...


Flagged = tuple[Listed, list[str]]


@dataclass(frozen=True)
class Board:
    """What one board page shows: its tickets with their codes, the filters and where pages go."""

    repository: str
    items: Sequence[Flagged]
    now: datetime
    work: WorkState | None = None
    code: str = ""
    total: int | None = None
    work_asked: str = ""  # the query's `work`, as given, kept in the page links
    newer: bool = False  # this is not the first page
    older: str | None = None  # the next page's cursor token


def age(since: datetime, now: datetime) -> str:
    """A short age: 5 min, 3 h, 12 d."""
    seconds = max(0.0, (now - since).total_seconds())
    if seconds < 3600:
        return f"{int(seconds // 60)} min"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h"
    return f"{int(seconds // 86400)} d"


def rails(ticket: Ticket) -> Markup:
    """The repository and deployment rails of a card."""
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
        rails(ticket),
        Markup('<p class="flags">{}</p>').format(flags) if codes else "",
        Markup('<p class="muted">closed on GitHub</p>') if ticket.closed else "",
        f"{holder} · " if holder else "",
        age(item.created_at, now),
    )


def _options(values: Sequence[str], chosen: str, shown: Sequence[str]) -> Markup:
    return Markup("").join(
        Markup('<option value="{}"{}>{}</option>').format(
            value, Markup(" selected") if value == chosen else "", text
        )
        for value, text in zip(values, shown, strict=True)
    )


def filters(repository: str, work: str, code: str) -> Markup:
    """The filter form (GET, so a filtered board is a link)."""
    states = [s.value for s in WorkState]
    return Markup(
        '<form class="filters" method="get" action="/tickets/{}" role="search">'
        '<label for="work">Work state<select id="work" name="work">'
        '<option value="">any</option>{}</select></label>'
        '<label for="attention">Needs attention<select id="attention" name="attention">'
        '<option value="">any</option>{}</select></label>'
        '<button type="submit">Filter</button> <a href="/tickets/{}">Clear</a></form>'
    ).format(
        repository,
        _options(states, work, states),
        _options(list(CODES), code, [words(c) for c in CODES]),
        repository,
    )


def column(repository: str, state: WorkState, items: Sequence[Flagged], now: datetime) -> Markup:
    """One work state's column of cards ("none" when empty)."""
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


def pager(board: Board) -> Markup:
    """Links to the newest page and the next older one, keeping the filters."""
    keep = {k: v for k, v in (("work", board.work_asked), ("attention", board.code)) if v}
    links = []
    if board.newer:
        links.append(Markup('<a href="/tickets/{}?{}">Newest</a>').format(board.repository, urlencode(keep)))
    if board.older is not None:
        target = urlencode(keep | {"after": board.older})
        links.append(
            Markup('<a href="/tickets/{}?{}" rel="next">Older tickets</a>').format(board.repository, target)
        )
    return (
        Markup('<nav class="pages" aria-label="pages">{}</nav>').format(Markup(" ").join(links))
        if links
        else Markup("")
    )


def board_page(board: Board, **who: str | None) -> Markup:
    """The whole board page: heading, filters, count, one column per shown work state, page links."""
    name, work = board.repository, board.work
    columns = Markup("").join(
        column(name, state, [(i, c) for i, c in board.items if i.ticket.work is state], board.now)
        for state in WorkState
        if work is None or state is work
    )
    counted = (
        Markup('<p class="muted">{} tickets{}</p>').format(board.total, " match" if work else "")
        if board.total is not None
        else ""
    )
    body = Markup(
        '<h1>{}</h1><nav class="pages" aria-label="repository"><a href="/tickets/{}/report">Report</a></nav>'
        '{}{}<div class="board">{}</div>{}'
    ).format(
        name,
        name,
        filters(name, work.value if work else "", board.code),
        counted,
        columns,
        pager(board),
    )
    return document(f"{name} board", body, **who)
