"""The ticket pages in a real headless browser (Debian's chromium through playwright): sign in
through the GitHub stand-in's OAuth flow, read the board, filter it, open a ticket, and see that
an account without access gets nothing of a private repository.

Without chromium these tests skip, unless `RAILYARD_REQUIRE_BROWSER=1` (CI, see .ci/run),
where a missing browser fails the run instead.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from support.web_world import HOSTILE, PRIVATE_REPO, WebWorld, seed_tickets, web_world


@pytest.fixture
async def web(tmp_path: Path) -> AsyncIterator[WebWorld]:
    """The server with sign-in and its seeded tickets."""
    async with web_world(tmp_path) as world:
        await seed_tickets(world)
        yield world


async def signed_in_page(browser: Any, web: WebWorld, login: str, path: str) -> Any:
    """A fresh browser context, 375 px wide (a phone), that signs in as `login` from `path`."""
    web.github.oauth.approving = login
    context = await browser.new_context(viewport={"width": 375, "height": 800})
    page = await context.new_page()
    problems: list[str] = []
    page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    page.problems = problems
    await page.goto(web.server.url + path)
    return page


async def test_a_release_owner_signs_in_reads_the_board_filters_and_opens_a_ticket(
    browser: Any, web: WebWorld
) -> None:
    """From /tickets/acme/web through GitHub and back to the board; filter to delivered; open #12."""
    page = await signed_in_page(browser, web, "olivia", "/tickets/acme/web")
    assert page.url == f"{web.server.url}/tickets/acme/web"
    assert await page.inner_text("h1") == "acme/web"
    delivered = page.locator("section#col-delivered, section[aria-labelledby=col-delivered]")
    assert "#12" in await delivered.inner_text() and "awaiting review" in await delivered.inner_text()
    await page.select_option("#work", "open")
    await page.click("button[type=submit] >> text=Filter")
    assert page.url.endswith("/tickets/acme/web?work=open&attention=")
    assert await page.locator("a", has_text="#13").count() == 1
    assert await page.locator("a", has_text="#12").count() == 0
    await page.goto(f"{web.server.url}/tickets/acme/web")
    await page.click("a:text-is('#12')")
    assert await page.inner_text("h1") == "acme/web #12"
    assert HOSTILE in await page.inner_text("blockquote")  # shown as text, never run
    width = await page.evaluate("document.documentElement.scrollWidth")
    assert width <= 375, "the page scrolls sideways at phone width"
    assert not page.problems, page.problems  # no CSP violation, no failed asset


async def test_an_account_without_access_sees_nothing_of_the_private_repository(
    browser: Any, web: WebWorld
) -> None:
    """mallory's list lacks acme/vault, and its board and ticket answer 404 in the browser too."""
    page = await signed_in_page(browser, web, "mallory", "/tickets")
    listing = await page.inner_text("main")
    assert "acme/web" in listing and PRIVATE_REPO not in listing
    for path in (f"/tickets/{PRIVATE_REPO}", f"/tickets/{PRIVATE_REPO}/7"):
        response = await page.goto(web.server.url + path)
        assert response is not None and response.status == 404
        assert "Rotate" not in await page.content() and "vault" not in await page.inner_text("main")
