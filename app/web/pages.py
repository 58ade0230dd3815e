"""The web pages' HTTP side: the security headers every page carries, and the stylesheet.

Every page is server-rendered HTML (worded and escaped in `app/views/pages/`), readable without
JavaScript, with no external script, font or stylesheet: the stylesheet is served by this server
(`/assets/railyard.css`) and the Content-Security-Policy allows nothing else.
"""

from __future__ import annotations

from importlib import resources

from aiohttp import web
from markupsafe import Markup

from app.views.pages import document

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
STYLESHEET_PATH = document.STYLESHEET_PATH

# The stylesheet ships in the package beside this module (see the file for its contrast notes).
STYLESHEET = (resources.files("app.web") / "railyard.css").read_text()


def html_response(page: Markup, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    """The page with the security headers (CSP, no framing, no caching)."""
    return web.Response(
        status=status, text=str(page), content_type="text/html", headers=SECURITY_HEADERS | (headers or {})
    )


def not_found(**who: str | None) -> web.Response:
    """The one 404 for anything missing or not readable: it says nothing about which."""
    return html_response(document.not_found(**who), 404)


def sign_in_disabled() -> web.Response:
    """503 while the app's OAuth client is not configured, with how to configure it."""
    return html_response(document.sign_in_disabled(), 503)


async def stylesheet(request: web.Request) -> web.Response:
    """The one stylesheet (the CSP allows styles from this server only)."""
    return web.Response(
        text=STYLESHEET,
        content_type="text/css",
        headers={"Cache-Control": "public, max-age=3600", "X-Content-Type-Options": "nosniff"},
    )
