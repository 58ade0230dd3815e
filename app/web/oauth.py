"""Sign-in with GitHub through the app's own OAuth client: `/login`, `/login/callback`, `/logout`.

`/login?next=PATH` sends the browser to `{GITHUB_WEB_URL}/login/oauth/authorize` with a fresh
`state`, also sealed in a ten-minute cookie with the (local) return path. The callback checks the
two match (constant time), exchanges the code (at most `EXCHANGES_PER_MINUTE` exchanges per
caller's address: a state cookie can be replayed for ten minutes, and each replay with a made-up
code would otherwise have railyard send GitHub a failed exchange with the client's secret),
asks `GET /user` who it is and which repositories it can read, starts the session in the
database (`app.store.web_sessions`) and seals its id in the session cookie. `/logout` is a POST
carrying the session's CSRF token; it ends the session in the database, so every server process
refuses the cookie from that moment.
"""

from __future__ import annotations

import asyncio
import hmac
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlencode

import structlog
from aiohttp import web

from app.github.aiohttp_transport import AiohttpTransport
from app.settings import Settings
from app.store.database import Database
from app.store.web_sessions import WebSessions
from app.views.pages.document import sign_in_refused
from app.web.access import Access, AccessError, Person
from app.web.bodies import BodyRefused, small_form
from app.web.pages import html_response
from app.web.responses import guarded
from app.web.sessions import (
    SESSION_COOKIE,
    SESSION_SECONDS,
    STATE_COOKIE,
    STATE_SECONDS,
    Sealer,
    clear_cookie,
    is_https,
    session_key,
    set_cookie,
)
from app.web.token_checks import ADDRESSES, client_key
from policies.budgets import Budget, WindowCounter

log = structlog.get_logger(__name__)

_CODE = re.compile(r"^[A-Za-z0-9_.-]{1,200}$")
EXCHANGES_PER_MINUTE = 30  # codes exchanged with GitHub per minute per address (per process)
_LOCAL_PATH = re.compile(r"^/(?![/\\])[A-Za-z0-9._~!$&'()*+,;=:@%/?-]{0,500}$")


@dataclass(frozen=True)
class Session:
    """A signed-in person, their GitHub user token (never logged) and the session's CSRF token."""

    person: Person
    token: str
    csrf: str
    session_id: str = ""  # the key of its row in `web_sessions`; never logged


@dataclass
class SignIn:
    """Sign-in for one server: its settings, its cookie sealer and what GitHub says about people."""

    settings: Settings
    sealer: Sealer
    access: Access
    sessions: WebSessions
    clock: Callable[[], float] = field(default=time.time)
    exchanges: WindowCounter = field(
        default_factory=lambda: WindowCounter(
            Budget("sign-in code exchanges", EXCHANGES_PER_MINUTE, 60.0), accounts=ADDRESSES
        )
    )

    @property
    def secure(self) -> bool:
        """Whether cookies are Secure (PUBLIC_URL is https)."""
        return is_https(self.settings)

    def callback_url(self, request: web.Request) -> str:
        """Where GitHub sends the browser back: PUBLIC_URL's, else this request's origin."""
        base = self.settings.public_url or str(request.url.origin())
        return base.rstrip("/") + "/login/callback"

    async def session(self, request: web.Request) -> Session | None:
        """The request's session, if its cookie is genuine and unexpired and the session was not
        signed out (on any process: the database says)."""
        value = self.sealer.open(SESSION_COOKIE, request.cookies.get(SESSION_COOKIE))
        if value is None:
            return None
        try:
            person = Person(int(value["id"]), str(value["login"]))
            session = Session(person, str(value["token"]), str(value["csrf"]), str(value["sid"]))
        except (KeyError, TypeError, ValueError):
            return None  # a cookie from before sessions were kept in the database: sign in again
        now = self.clock()
        live = await asyncio.to_thread(self.sessions.live, session.session_id, person.account_id, now)
        return session if live else None


SIGN_IN: web.AppKey[SignIn] = web.AppKey("sign_in", SignIn)


def make_sign_in(settings: Settings, database: Database) -> SignIn | None:
    """Sign-in for `settings` with its sessions in `database`, or None while the OAuth client is
    not configured."""
    if not settings.sign_in:
        return None
    access = Access(settings, transport=AiohttpTransport())
    return SignIn(settings, Sealer(session_key(settings)), access, WebSessions(database))


def local_path(candidate: str | None, default: str = "/tickets") -> str:
    """`candidate` if it is a path on this server (no scheme, no host, no `//`), else `default`."""
    if candidate and _LOCAL_PATH.match(candidate):
        return candidate
    return default


def to_login(request: web.Request) -> web.Response:
    """A redirect to sign-in that brings the person back to this page."""
    target = request.rel_url.path_qs
    raise web.HTTPSeeOther("/login?" + urlencode({"next": local_path(target)}))


async def login(request: web.Request) -> web.Response:
    """Send the browser to GitHub's authorization page, with a state it must bring back."""
    sign_in = request.app[SIGN_IN]
    state = secrets.token_urlsafe(32)
    settings = sign_in.settings
    query = {
        "client_id": settings.github_client_id or "",
        "redirect_uri": sign_in.callback_url(request),
        "state": state,
    }
    target = settings.github_web_url.rstrip("/") + "/login/oauth/authorize?" + urlencode(query)
    response = web.HTTPFound(target)
    sealed = sign_in.sealer.seal(
        STATE_COOKIE, {"state": state, "next": local_path(request.query.get("next"))}, STATE_SECONDS
    )
    set_cookie(response, STATE_COOKIE, sealed, STATE_SECONDS, sign_in.secure)
    raise response


async def callback(request: web.Request) -> web.Response:
    """Check `state`, exchange the code, learn who signed in and what they read; start the session."""
    sign_in = request.app[SIGN_IN]
    expected = sign_in.sealer.open(STATE_COOKIE, request.cookies.get(STATE_COOKIE))
    given = request.query.get("state", "")
    if expected is None or not hmac.compare_digest(given.encode(), str(expected.get("state", "")).encode()):
        return _refused(
            sign_in, 400, "This sign-in was not started here, or it took longer than ten minutes."
        )
    code = request.query.get("code", "")
    if not _CODE.match(code):
        return _refused(sign_in, 400, "GitHub sent no usable code back (was access denied?).")
    if (wait := sign_in.exchanges.spend(client_key(request.remote), sign_in.clock())) is not None:
        reason = f"Too many sign-ins from your address at once; sign in again in {wait} seconds."
        return _refused(sign_in, 429, reason, {"Retry-After": str(wait)})
    try:
        token = await sign_in.access.exchange(code, sign_in.callback_url(request))
        person = await sign_in.access.person(token)
        await sign_in.access.readable(token, fresh=True)  # checked at sign-in
    except AccessError as error:
        return _refused(sign_in, error.status if error.status < 500 else 502, str(error))
    session_id = await asyncio.to_thread(
        sign_in.sessions.start, person.account_id, sign_in.clock(), SESSION_SECONDS
    )
    log.info("signed in", account_id=person.account_id)
    session = {
        "id": person.account_id,
        "login": person.login,
        "token": token,
        "csrf": secrets.token_urlsafe(24),
        "sid": session_id,
    }
    response = web.HTTPSeeOther(local_path(str(expected.get("next", ""))))
    set_cookie(
        response,
        SESSION_COOKIE,
        sign_in.sealer.seal(SESSION_COOKIE, session, SESSION_SECONDS),
        SESSION_SECONDS,
        sign_in.secure,
    )
    clear_cookie(response, STATE_COOKIE, sign_in.secure)
    raise response


async def logout(request: web.Request) -> web.Response:
    """End the session: only a POST from this site's own form (its CSRF token) is obeyed."""
    sign_in = request.app[SIGN_IN]
    session = await sign_in.session(request)
    if session is None:  # nothing of a stranger's body is read
        raise web.HTTPSeeOther("/login")
    try:
        form = await small_form(request)
    except BodyRefused as refused:
        return _refused(sign_in, refused.status, refused.message)
    if not hmac.compare_digest(form.get("csrf", "").encode(), session.csrf.encode()):
        return _refused(sign_in, 403, "Sign-out needs the form on this site's pages.")
    # Ended in the database first: from here every process refuses the cookie, whatever GitHub says.
    await asyncio.to_thread(sign_in.sessions.end, session.session_id, sign_in.clock())
    sign_in.access.forget(session.token)
    if not await sign_in.access.revoke(session.token):  # the cookie is cleared either way
        log.warning("sign-out: GitHub did not revoke the token; it lapses when it expires")
    response = web.HTTPSeeOther("/")
    clear_cookie(response, SESSION_COOKIE, sign_in.secure)
    raise response


def _refused(
    sign_in: SignIn, status: int, reason: str, headers: dict[str, str] | None = None
) -> web.Response:
    response = html_response(sign_in_refused(reason), status, headers)
    clear_cookie(response, STATE_COOKIE, sign_in.secure)
    return response


def add_sign_in_routes(app: web.Application, sign_in: SignIn) -> None:
    """Register `/login`, `/login/callback` and `/logout`; the HTTP client closes with the app."""
    app[SIGN_IN] = sign_in
    app.router.add_get("/login", guarded(login))
    app.router.add_get("/login/callback", guarded(callback))
    app.router.add_post("/logout", guarded(logout))

    async def close(_: web.Application) -> None:
        await sign_in.access.close()

    app.on_cleanup.append(close)
