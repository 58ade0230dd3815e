"""The ticket pages: `/tickets`, a board per repository, a page per ticket, the report.

Every page needs a session (else a redirect to `/login` with the way back) and shows a
repository only while GitHub says the person's token can read it (`app.web.access`); any other
repository answers the same 404 as one that does not exist, so nothing leaks that it exists.
Each page is paid for out of the account's page reads before it reads anything
(`app.web.page_costs`: past them, 429).
Here are only the routes: what a page shows is read by `app.web.page_reads` and worded by
`app.views.pages`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from urllib.parse import urlencode

from aiohttp import web

from app.settings import Settings
from app.store.database import Database
from app.store.listing import Listing
from app.store.tickets import TicketService
from app.views.pages import board as board_view
from app.views.pages import document
from app.views.pages import report as report_view
from app.views.pages import ticket as ticket_view
from app.web import page_costs
from app.web.access import AccessError, Readable
from app.web.oauth import SIGN_IN, Session, SignIn, add_sign_in_routes, local_path, make_sign_in, to_login
from app.web.page_costs import Cost, PageCosts
from app.web.page_reads import Reads, is_ours, parse_since, read_board, read_report, read_ticket
from app.web.pages import STYLESHEET_PATH, html_response, not_found, sign_in_disabled, stylesheet
from app.web.responses import guarded
from app.web.sessions import SESSION_COOKIE, clear_cookie
from policies.model import TicketKey

Page = Callable[[web.Request, Session, dict[str, Readable]], Awaitable[web.Response]]


def signed_in(page: Page, cost: Cost) -> Callable[[web.Request], Awaitable[web.Response]]:
    """Run `page` for a signed-in person with the repositories they can read, once it is paid
    for (`cost` of the account's page reads; past them a 429 and nothing read); else send to
    sign-in."""

    async def handler(request: web.Request) -> web.Response:
        sign_in = request.app.get(SIGN_IN)
        if sign_in is None:
            return sign_in_disabled()
        session = await sign_in.session(request)
        if session is None:
            return to_login(request)
        paid = request.app[PAGE_COSTS].spend(session.person.account_id, cost(request.query), sign_in.clock())
        if paid is not None:
            return over_budget(session, paid)
        try:  # the page's own asks of GitHub (one repository alone) fail as the list's do
            return await page(request, session, await sign_in.access.readable(session.token))
        except AccessError as error:
            return _access_failed(sign_in, request, error)

    return handler


def _access_failed(sign_in: SignIn, request: web.Request, error: AccessError) -> web.Response:
    if error.status == 401:  # the token was revoked or expired: sign in again
        response = web.HTTPSeeOther("/login?" + urlencode({"next": local_path(request.rel_url.path_qs)}))
        clear_cookie(response, SESSION_COOKIE, sign_in.secure)
        raise response
    return html_response(document.github_unavailable(str(error)), 502)


def over_budget(session: Session, retry_after: int) -> web.Response:
    """429: the account's page reads of the minute are spent."""
    page = document.too_many_pages(retry_after, **who(session))
    return html_response(page, 429, {"Retry-After": str(retry_after)})


def who(session: Session) -> dict[str, str]:
    """The header's signed-in part for `session`."""
    return {"login": session.person.login, "csrf": session.csrf}


async def repository_of(
    request: web.Request, session: Session, readable: dict[str, Readable]
) -> Readable | None:
    """The path's repository, if the person can read it (named by their installation lists, or,
    a repository railyard serves that no list names, by GitHub's answer about it alone) and
    railyard's records under that name are that repository's (GitHub's id is the stored one)."""
    name = f"{request.match_info['owner']}/{request.match_info['repo']}".lower()
    found = readable.get(name)
    if found is None and name in await served(request):
        found = await request.app[SIGN_IN].access.one(session.token, name, session.person.account_id)
    if found is None or not await is_ours(request.app[READS].listing, name, found.repository_id):
        return None
    return found


async def served(request: web.Request) -> set[str]:
    """The repositories railyard keeps tickets of (lowercase)."""
    found = await asyncio.to_thread(request.app[READS].listing.repositories)
    # A retired name (`owner/name@ID`: the name went to another repository) is no one's to read.
    return {name.lower() for name, _ in found if "@" not in name}


async def repositories_page(
    request: web.Request, session: Session, readable: dict[str, Readable]
) -> web.Response:
    """`/tickets`: the repositories the person can read, each linking to its board."""
    shown, access = dict(readable), request.app[SIGN_IN].access
    for name in sorted(await served(request) - set(readable)):
        found = access.seen_public(name) or await access.one(session.token, name, session.person.account_id)
        if found is not None:
            shown[name] = found
    return html_response(document.repositories(shown.values(), **who(session)))


READS: web.AppKey[Reads] = web.AppKey("page_reads", Reads)
PAGE_COSTS: web.AppKey[PageCosts] = web.AppKey("page_costs", PageCosts)


async def board(request: web.Request, session: Session, readable: dict[str, Readable]) -> web.Response:
    """The board of a repository the person can read; 404 otherwise."""
    found = await repository_of(request, session, readable)
    if found is None:
        return not_found(**who(session))
    shown = await read_board(request.app[READS].listing, found.full_name, request.query)
    return html_response(board_view.board_page(shown, **who(session)))


async def ticket(request: web.Request, session: Session, readable: dict[str, Readable]) -> web.Response:
    """A ticket of a repository the person can read; the same 404 for anything missing."""
    found = await repository_of(request, session, readable)
    if found is None:
        return not_found(**who(session))
    key = TicketKey(found.full_name, int(request.match_info["number"]))
    record = await read_ticket(request.app[READS].tickets, key)
    if record is None:
        return not_found(**who(session))
    shown, history = record
    return html_response(ticket_view.ticket_page(found.full_name, shown, history, **who(session)))


async def report(request: web.Request, session: Session, readable: dict[str, Readable]) -> web.Response:
    """The report of a readable repository for `?since=` (default: the whole record); 404 otherwise."""
    found = await repository_of(request, session, readable)
    if found is None:
        return not_found(**who(session))
    since = parse_since(request.query.get("since", ""))
    figures = await read_report(request.app[READS].listing, found.full_name, since)
    return html_response(report_view.report_page(found.full_name, figures, since, **who(session)))


PAGES: dict[str, tuple[Page, Cost]] = {
    "/tickets": (repositories_page, page_costs.plain),
    "/tickets/{owner}/{repo}": (board, page_costs.board),
    "/tickets/{owner}/{repo}/report": (report, page_costs.heavy),
    "/tickets/{owner}/{repo}/{number:[0-9]{1,9}}": (ticket, page_costs.plain),
}


def install(app: web.Application, settings: Settings, database: Database, tickets: TicketService) -> None:
    """Wire the stylesheet, sign-in (when its OAuth client is configured) and the ticket pages."""
    sign_in = make_sign_in(settings, database)
    if sign_in is not None:
        add_sign_in_routes(app, sign_in)
    app[READS] = Reads(Listing(database), tickets)
    app[PAGE_COSTS] = PageCosts()
    app.router.add_get(STYLESHEET_PATH, guarded(stylesheet))
    for path, (page, cost) in PAGES.items():
        app.router.add_get(path, guarded(signed_in(page, cost)))
