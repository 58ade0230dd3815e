"""Setup mode: register the GitHub App from `app.yml` and save its credentials to `.env`.

`railyard serve` without credentials prints a one-time URL (`/?token=...`). That page posts
the manifest, with a fresh `state`, to GitHub's new-app page; GitHub sends the browser back to
`/setup/callback?code=...&state=...`; the code is exchanged at
`POST /app-manifests/{code}/conversions` (no authentication: the code is the credential) and
the app's id, private key and webhook secret are written to `.env` with mode 0600. After that
the token stops working and the page says to restart the server. Nothing is written on error.
"""

from __future__ import annotations

import asyncio
import hmac
import re
import secrets
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import orjson
import structlog
from aiohttp import web
from cryptography.hazmat.primitives import serialization

from app.github.client import API_VERSION, USER_AGENT
from app.github.endpoints import ENDPOINTS
from app.settings import Settings
from app.views.pages.setup_page import (
    ALREADY_SAVED,
    PUBLIC_URL_NEEDED,
    SETUP_LINK_REQUIRED,
    WRONG_STATE,
    paragraph,
    registered,
    registration_form,
    setup_document,
)
from app.web.envfile import update_env_file
from app.web.manifest import ManifestError, load_manifest, manifest_for, registration_url
from app.web.responses import guarded

log = structlog.get_logger(__name__)

_CODE = re.compile(r"^[A-Za-z0-9_-]{1,200}$")
_OUTSTANDING_STATES = 20


class SetupError(Exception):
    """A registration step failed; `status` is the page's HTTP status, the message says why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class SetupFlow:
    """One server's setup mode: its one-time token, the states it issued, where `.env` goes."""

    settings: Settings
    manifest: dict[str, Any]
    token: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    env_path: Path = field(default_factory=lambda: Path.cwd() / ".env")
    timeout: float = 15.0
    saved: bool = False
    states: deque[str] = field(default_factory=lambda: deque(maxlen=_OUTSTANDING_STATES))
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def token_matches(self, given: str) -> bool:
        """Whether `given` is the token, compared in constant time; never once credentials are saved."""
        return not self.saved and hmac.compare_digest(given.encode(), self.token.encode())

    def issue_state(self) -> str:
        """A fresh `state` for one registration form (the oldest is forgotten past a few)."""
        state = secrets.token_urlsafe(24)
        self.states.append(state)
        return state

    def state_known(self, given: str) -> bool:
        """Whether `given` is a state this server issued, each compared in constant time."""
        matches = [hmac.compare_digest(given.encode(), state.encode()) for state in self.states]
        return any(matches)


SETUP: web.AppKey[SetupFlow] = web.AppKey("setup", SetupFlow)


def add_setup_routes(app: web.Application, flow: SetupFlow) -> None:
    """Serve the setup page at `/` and GitHub's redirect back at `/setup/callback`."""
    app[SETUP] = flow
    app.router.add_get("/", guarded(setup_page))
    app.router.add_get("/setup/callback", guarded(setup_callback))


def start_setup(settings: Settings, token: str | None = None, env_path: Path | None = None) -> SetupFlow:
    """The setup flow for `settings`, with `app.yml` loaded (ManifestError if it cannot be)."""
    flow = SetupFlow(settings, load_manifest())
    if token is not None:
        flow.token = token
    if env_path is not None:
        flow.env_path = env_path
    return flow


async def setup_page(request: web.Request) -> web.Response:
    """The registration form, for the holder of the one-time token only."""
    flow = request.app[SETUP]
    if flow.saved:
        return _already_saved()
    if not flow.token_matches(request.query.get("token", "")):
        return _page(403, "Setup link required", SETUP_LINK_REQUIRED)
    if not flow.settings.public_url:
        return _page(200, "Set PUBLIC_URL first", PUBLIC_URL_NEEDED)
    organization = request.query.get("org", "").strip() or None
    try:
        action = registration_url(flow.settings.github_api_url, flow.issue_state(), organization)
    except ManifestError as error:
        return _page(400, "Not an organization name", paragraph(str(error)))
    return _page(200, "Register railyard on GitHub", _form(flow, action, organization))


async def setup_callback(request: web.Request) -> web.Response:
    """Exchange GitHub's code for the app's credentials and save them to `.env`."""
    flow = request.app[SETUP]
    async with flow.lock:  # one exchange at a time, so credentials are saved at most once
        if flow.saved:
            return _already_saved()
        if not flow.state_known(request.query.get("state", "")):
            return _page(403, "Unknown registration", WRONG_STATE)
        try:
            app_data, values = await register(flow, request.query.get("code", ""))
        except SetupError as error:
            return _page(error.status, "Registration not finished", paragraph(error.message))
        flow.saved = True
        flow.states.clear()
    log.info("github app registered", app_id=app_data.get("id"), slug=app_data.get("slug"))
    return _page(200, "railyard is registered", _next_steps(flow, app_data, values))


async def register(flow: SetupFlow, code: str) -> tuple[dict[str, Any], dict[str, str]]:
    """GitHub's answer for `code` and the values saved from it to `flow.env_path`."""
    app_data = await exchange_code(flow.settings.github_api_url, code, flow.timeout)
    values = credentials(app_data)
    try:
        await asyncio.to_thread(update_env_file, flow.env_path, values)
    except OSError as error:
        raise SetupError(500, f"Writing {flow.env_path} failed: {error.strerror or error}.") from None
    return app_data, values


async def exchange_code(api_url: str, code: str, timeout: float = 15.0) -> dict[str, Any]:
    """GitHub's answer to `POST /app-manifests/{code}/conversions`: the new app and its secrets."""
    if not _CODE.match(code):
        raise SetupError(400, "GitHub's redirect carried no usable code. Start again from the setup link.")
    path = ENDPOINTS["create_app_from_manifest"].path.format(code=quote(code, safe=""))
    headers = {
        "Accept": "application/vnd.github+json",
        "X-GitHub-Api-Version": API_VERSION,
        "User-Agent": USER_AGENT,
    }
    try:
        async with httpx.AsyncClient(timeout=timeout) as client:
            response = await client.post(api_url.rstrip("/") + path, headers=headers)
    except httpx.HTTPError as error:
        raise SetupError(
            502,
            f"GitHub could not be reached at {api_url} ({type(error).__name__}). Nothing was saved; "
            "reload this page to try again (the code stays valid for an hour).",
        ) from None
    return _conversion(response)


def _conversion(response: httpx.Response) -> dict[str, Any]:
    if response.status_code in (404, 422):
        raise SetupError(
            400,
            f"GitHub did not accept the registration code ({_github_message(response)}): codes are "
            "used once and expire after an hour. Nothing was saved; start again from the setup link.",
        )
    if response.status_code != 201:
        raise SetupError(
            502,
            f"GitHub answered {response.status_code} ({_github_message(response)}). Nothing was saved; "
            "reload this page to try again.",
        )
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise SetupError(502, "GitHub's answer was not a JSON object. Nothing was saved.")
    return body


def credentials(app_data: dict[str, Any]) -> dict[str, str]:
    """The `.env` values from GitHub's answer: APP_ID, PRIVATE_KEY and, if given, WEBHOOK_SECRET
    and the app's OAuth client (GITHUB_CLIENT_ID, GITHUB_CLIENT_SECRET)."""
    app_id, pem, secret = app_data.get("id"), app_data.get("pem"), app_data.get("webhook_secret")
    if not isinstance(app_id, int) or not isinstance(pem, str):
        raise SetupError(502, "GitHub's answer lacked the app's id or private key. Nothing was saved.")
    try:
        serialization.load_pem_private_key(pem.encode(), password=None)
    except (ValueError, TypeError):
        raise SetupError(502, "GitHub's answer held no usable private key. Nothing was saved.") from None
    values = {"APP_ID": str(app_id), "PRIVATE_KEY": pem}
    if isinstance(secret, str) and secret:
        values["WEBHOOK_SECRET"] = secret
    # The app's own OAuth client, for sign-in with GitHub on the web pages.
    for key, name in (("client_id", "GITHUB_CLIENT_ID"), ("client_secret", "GITHUB_CLIENT_SECRET")):
        if isinstance(value := app_data.get(key), str) and value:
            values[name] = value
    return values


def _github_message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.reason_phrase or "no message"
    message = body.get("message") if isinstance(body, dict) else None
    return str(message)[:200] if message else response.reason_phrase or "no message"


def _form(flow: SetupFlow, action: str, organization: str | None) -> str:
    manifest = manifest_for(flow.settings.public_url or "", flow.manifest)
    return registration_form(manifest, orjson.dumps(manifest).decode(), action, organization, flow.token)


def _next_steps(flow: SetupFlow, app_data: dict[str, Any], values: dict[str, str]) -> str:
    return registered(app_data, values["APP_ID"], str(flow.env_path), "WEBHOOK_SECRET" in values)


def _already_saved() -> web.Response:
    return _page(404, "Setup is finished", ALREADY_SAVED)


def _page(status: int, title: str, body: str) -> web.Response:
    """An HTML page with no external assets; the token in its URL never leaks as a Referer."""
    document = setup_document(title, body)
    return web.Response(status=status, text=document, content_type="text/html", headers=_SECURITY_HEADERS)


_SECURITY_HEADERS = {
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; "
    "base-uri 'none'",
}


def setup_url(settings: Settings, flow: SetupFlow) -> str:
    """The one-time link to print at start (a wildcard HOST is shown as 127.0.0.1)."""
    host = "127.0.0.1" if settings.host in ("0.0.0.0", "::", "") else settings.host  # noqa: S104
    return f"http://{host}:{settings.port}/?token={flow.token}"
