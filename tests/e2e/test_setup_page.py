"""The setup page of a real `railyard serve`, driven in a real headless browser (Debian's
chromium through playwright); the form's post to GitHub is intercepted, never sent.

Without chromium these tests skip, unless `RAILYARD_REQUIRE_BROWSER=1` (CI, see .ci/run),
where a missing browser fails the run instead.
"""

from __future__ import annotations

import asyncio
import json
import re
import stat
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from aiohttp import web

from app.web.manifest import load_manifest
from tests.fakes import ServerProcess, manifest_conversion

PUBLIC_URL = "https://railyard.example.com"
TOKEN_LINE = re.compile(r"open (http://\S+/\?token=\S+)")


async def start_in_setup_mode(tmp_path: Path, **env: str) -> tuple[ServerProcess, str]:
    """`railyard serve` without credentials in tmp_path, and the one-time link it printed."""
    server = ServerProcess(
        env={"DATABASE_URL": f"sqlite:///{tmp_path}/railyard.db", "PUBLIC_URL": PUBLIC_URL, **env},
        cwd=tmp_path,
    )
    for name in ("APP_ID", "PRIVATE_KEY", "PRIVATE_KEY_PATH", "WEBHOOK_SECRET"):
        server.env[name] = ""  # blank is unset: setup mode even if this shell has credentials
    await server.start()
    assert server.log is not None
    for _ in range(100):  # the link is printed right after the server starts listening
        found = TOKEN_LINE.search(server.log.read_text())
        if found:
            return server, found.group(1)
        await asyncio.sleep(0.05)
    server.stop()
    raise AssertionError(f"no setup link printed: {server.log.read_text()[-2000:]}")


@pytest.fixture
async def conversions_standin() -> AsyncIterator[str]:
    """A GitHub API answering only `POST /api/v3/app-manifests/{code}/conversions` (code: abc123)."""

    async def convert(request: web.Request) -> web.Response:
        if request.match_info["code"] != "abc123":
            return web.json_response({"message": "Not Found"}, status=404)
        return web.json_response(manifest_conversion(), status=201)

    app = web.Application()
    app.router.add_post("/api/v3/app-manifests/{code}/conversions", convert)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}/api/v3"
    finally:
        await runner.cleanup()


async def submit_and_intercept(page: Any, pattern: str) -> Any:
    """Click "Register on GitHub" and return the intercepted request; GitHub is never reached."""
    posted: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

    async def intercept(route: Any) -> None:
        if not posted.done():
            posted.set_result(route.request)
        await route.fulfill(status=200, content_type="text/html", body="<p>GitHub would ask now</p>")

    await page.route(pattern, intercept)
    await page.click("#register")
    return await asyncio.wait_for(posted, timeout=15)


async def test_the_setup_page_posts_a_valid_manifest_and_its_state_to_github(
    browser: Any, tmp_path: Path
) -> None:
    """The browser posts JSON carrying app.yml's permissions and events and PUBLIC_URL's URLs."""
    server, link = await start_in_setup_mode(tmp_path)
    try:
        page = await browser.new_page()
        await page.goto(link)
        request = await submit_and_intercept(page, "https://github.com/**")
    finally:
        server.stop()
    url = urlsplit(request.url)
    assert (request.method, url.netloc, url.path) == ("POST", "github.com", "/settings/apps/new")
    [state] = parse_qs(url.query)["state"]
    assert len(state) >= 32
    [posted] = parse_qs(request.post_data)["manifest"]
    manifest = json.loads(posted)
    expected = load_manifest()
    assert manifest["default_permissions"] == expected["default_permissions"]
    assert manifest["default_events"] == expected["default_events"]
    assert manifest["hook_attributes"] == {"url": f"{PUBLIC_URL}/webhooks", "active": True}
    assert manifest["redirect_url"] == f"{PUBLIC_URL}/setup/callback"
    assert manifest["url"] == PUBLIC_URL
    assert "referer" not in request.headers  # the token in the page's URL stays here


async def test_the_whole_registration_in_a_browser_saves_the_credentials(
    browser: Any, tmp_path: Path, conversions_standin: str
) -> None:
    """Form, GitHub's redirect back, the conversion: `.env` holds the app (0600), the link dies."""
    server, link = await start_in_setup_mode(tmp_path, GITHUB_API_URL=conversions_standin)
    try:
        page = await browser.new_page()
        await page.goto(link)
        github_web = conversions_standin.removesuffix("/api/v3")
        request = await submit_and_intercept(page, f"{github_web}/settings/apps/new*")
        [state] = parse_qs(urlsplit(request.url).query)["state"]
        # GitHub, having created the app, sends the browser to the manifest's redirect_url.
        await page.goto(f"{server.url}/setup/callback?code=abc123&state={state}")
        finished = await page.inner_text("body")
        again = await page.goto(link)
        assert again is not None and again.status == 404
    finally:
        server.stop()
    assert "railyard is registered" in finished and "installations/new" in finished
    env = tmp_path / ".env"
    assert stat.S_IMODE(env.stat().st_mode) == 0o600
    assert f'APP_ID="{manifest_conversion()["id"]}"' in env.read_text().splitlines()
