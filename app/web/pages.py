"""The web pages' shell: one HTML document, its stylesheet, its security headers.

Every page is server-rendered HTML, readable without JavaScript, with no external script,
font or stylesheet: the stylesheet is served by this server (`/assets/railyard.css`) and the
Content-Security-Policy allows nothing else. User text goes in through `markupsafe`, which
escapes whatever is not already `Markup`.
"""

from __future__ import annotations

from importlib import resources

from aiohttp import web
from markupsafe import Markup, escape

CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "Referrer-Policy": "same-origin",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
}
STYLESHEET_PATH = "/assets/railyard.css"

# The stylesheet ships in the package beside this module (see the file for its contrast notes).
STYLESHEET = (resources.files("app.web") / "railyard.css").read_text()


def document(title: str, body: Markup, *, login: str | None = None, csrf: str | None = None) -> Markup:
    """A whole page: the site header (with who is signed in and a sign-out form), then `body`."""
    who = Markup("")
    if login is not None and csrf is not None:
        who = Markup(
            '<div class="who">Signed in as <strong>{}</strong> '
            '<form class="inline" method="post" action="/logout">'
            '<input type="hidden" name="csrf" value="{}"><button type="submit">Sign out</button></form></div>'
        ).format(login, csrf)
    return Markup(
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        '<link rel="icon" href="data:,"><title>{} · railyard</title><link rel="stylesheet" href="{}">'
        "</head><body>"
        '<header class="site"><a href="/tickets"><strong>railyard</strong></a>{}</header>'
        "<main>{}</main></body></html>"
    ).format(title, STYLESHEET_PATH, who, body)


def html_response(page: Markup, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    """The page with the security headers (CSP, no framing, no caching)."""
    return web.Response(
        status=status, text=str(page), content_type="text/html", headers=SECURITY_HEADERS | (headers or {})
    )


def simple_page(status: int, title: str, body: Markup, **who: str | None) -> web.Response:
    """A page of a heading and `body`."""
    return html_response(document(title, Markup("<h1>{}</h1>{}").format(title, body), **who), status)


def not_found(**who: str | None) -> web.Response:
    """The one 404 for anything missing or not readable: it says nothing about which."""
    text = Markup(
        '<p>There is nothing here, or you cannot read it. <a href="/tickets">Your repositories</a>.</p>'
    )
    return simple_page(404, "Not found", text, **who)


def sign_in_disabled() -> web.Response:
    """What the pages say while the app's OAuth client is not configured."""
    return simple_page(
        503,
        "Sign-in is not enabled",
        Markup(
            "<p>The ticket pages need sign-in with GitHub, through the app's own OAuth client. Set "
            "<code>GITHUB_CLIENT_ID</code> and <code>GITHUB_CLIENT_SECRET</code> (the app's settings page on "
            "GitHub shows the client id and makes secrets; the setup page saves both when it registers the "
            "app), add <code>{}/login/callback</code> as the app's callback URL, then restart "
            "<code>railyard serve</code>. For GitHub Enterprise Server set <code>GITHUB_WEB_URL</code> "
            "too.</p>"
        ).format(Markup("PUBLIC_URL")),
    )


async def stylesheet(request: web.Request) -> web.Response:
    """The one stylesheet (the CSP allows styles from this server only)."""
    return web.Response(
        text=STYLESHEET,
        content_type="text/css",
        headers={"Cache-Control": "public, max-age=3600", "X-Content-Type-Options": "nosniff"},
    )


def e(text: object) -> Markup:
    """`text` escaped for HTML (Markup passes through)."""
    return escape(text)
