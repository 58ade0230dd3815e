"""The ticket pages on the real server, tickets made by signed webhooks, read after signing in
through the GitHub stand-in's OAuth flow (no browser): board, filters, ticket, report, and a
private repository that stays invisible (404) to an account GitHub says cannot read it."""

from __future__ import annotations

import html
import re
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from app.web.oauth import SIGN_IN
from github_standin import Fault
from support.web_world import HOSTILE, PRIVATE_REPO, WebWorld, seed_tickets, web_world


@pytest.fixture
async def web(tmp_path: Path) -> AsyncIterator[WebWorld]:
    """The server with sign-in and three tickets (two in acme/web, one in the private acme/vault)."""
    async with web_world(tmp_path) as world:
        await seed_tickets(world)
        yield world


async def page(web: WebWorld, login: str, path: str) -> tuple[int, str]:
    """`path` as `login` sees it after signing in: status and HTML."""
    async with web.browser_session() as client:
        await web.sign_in(client, login)
        async with client.get(path, allow_redirects=False) as response:
            return response.status, await response.text()


def without_csrf(page: str) -> str:
    """The page without its session's CSRF token (each sign-in has its own)."""
    return re.sub(r'name="csrf" value="[^"]*"', "", page)


async def test_the_board_shows_each_ticket_in_its_column_with_rails_and_flags(web: WebWorld) -> None:
    """#12 sits under delivered, flagged awaiting review, its repository rail shown; #13 under open."""
    status, board = await page(web, "olivia", "/tickets/acme/web")
    assert status == 200
    delivered = board.split('id="col-delivered"')[1].split("</section>")[0]
    opened = board.split('id="col-open"')[1].split("</section>")[0]
    assert 'href="/tickets/acme/web/12"' in delivered and "awaiting review" in delivered
    assert "repository: branch reported" in delivered and "deployment:" in delivered
    assert 'href="/tickets/acme/web/13"' in opened and "age " in opened


async def test_the_board_filters_by_work_state_and_attention(web: WebWorld) -> None:
    """?work=open keeps #13 only; ?attention=awaiting_review keeps #12 only."""
    _, only_open = await page(web, "olivia", "/tickets/acme/web?work=open")
    _, awaiting = await page(web, "olivia", "/tickets/acme/web?attention=awaiting_review")
    assert "/tickets/acme/web/13" in only_open and "/tickets/acme/web/12" not in only_open
    assert "/tickets/acme/web/12" in awaiting and "/tickets/acme/web/13" not in awaiting


async def test_the_ticket_page_shows_rails_attempts_evidence_and_log_with_user_text_escaped(
    web: WebWorld,
) -> None:
    """The delivery's summary is shown as text: no tag of it reaches the page."""
    status, ticket = await page(web, "olivia", "/tickets/acme/web/12")
    assert status == 200
    assert "Attempt 1 (current)" in ticket and "branch <code>agent/12-fix</code>" in ticket
    assert "<script>" not in ticket and "<img src=x" not in ticket
    assert f"<blockquote>{HOSTILE}</blockquote>" in html.unescape(ticket)  # shown, as text
    assert '<th scope="col">Event</th>' in ticket and "delivered" in ticket


async def test_the_report_page_draws_its_charts_as_inline_svg(web: WebWorld) -> None:
    """cody's one delivery is in the runners table and chart; no external asset is referenced."""
    status, report = await page(web, "olivia", "/tickets/acme/web/report")
    assert status == 200 and "<svg" in report and "cody" in report
    assert 'src="http' not in report and 'href="http' not in report


async def test_an_account_without_access_sees_nothing_of_a_private_repository(web: WebWorld) -> None:
    """mallory cannot read acme/vault: not listed, and its board, ticket and report answer the
    same 404 as a repository that does not exist; olivia, who can, sees its ticket."""
    _, listing = await page(web, "mallory", "/tickets")
    assert "acme/web" in listing and PRIVATE_REPO not in listing
    missing_status, missing = await page(web, "mallory", "/tickets/acme/nothing")
    for path in (f"/tickets/{PRIVATE_REPO}", f"/tickets/{PRIVATE_REPO}/7", f"/tickets/{PRIVATE_REPO}/report"):
        status, text = await page(web, "mallory", path)
        assert (
            (status, without_csrf(text))
            == (missing_status, without_csrf(missing))
            == (404, without_csrf(missing))
        ), path
        assert "vault" not in text.lower()
    status, board = await page(web, "olivia", f"/tickets/{PRIVATE_REPO}")
    assert status == 200 and f'href="/tickets/{PRIVATE_REPO}/7"' in board


async def test_a_public_repository_without_an_explicit_permission_is_readable_by_githubs_answer(
    web: WebWorld,
) -> None:
    """rita holds no permission on acme/web (no installation list names it for her), but GitHub
    says she can read it (public): its board shows; the private acme/vault still answers 404."""
    assert ("acme/web", "rita") not in web.github.permissions
    _, listing = await page(web, "rita", "/tickets")
    assert 'href="/tickets/acme/web"' in listing and PRIVATE_REPO not in listing
    status, board = await page(web, "rita", "/tickets/acme/web")
    assert status == 200 and 'href="/tickets/acme/web/12"' in board
    assert (await page(web, "rita", f"/tickets/{PRIVATE_REPO}"))[0] == 404


async def test_a_token_that_cannot_list_installations_still_sees_what_it_can_read(web: WebWorld) -> None:
    """GitHub answers 403 to the installation list (a token that is not the app's): the served
    repositories are asked about one by one, and only what GitHub says is readable shows."""
    web.github.inject("GET", r"^/user/installations$", *[Fault(status=403)] * 6)
    status, board = await page(web, "olivia", f"/tickets/{PRIVATE_REPO}")
    assert status == 200 and f'href="/tickets/{PRIVATE_REPO}/7"' in board
    assert (await page(web, "mallory", f"/tickets/{PRIVATE_REPO}"))[0] == 404


async def test_pages_past_the_accounts_read_budget_answer_429_and_read_nothing(web: WebWorld) -> None:
    """An account's pages spend 300 reads a minute (docs/what-people-see.md): a report or an
    attention filter costs 20, any other page 1. Past the budget a page answers 429 with
    Retry-After and shows nothing of the record, though a cheaper page may still fit; another
    account still reads, and the next minute the account reads again."""
    now = [time.time()]
    web.server.app[SIGN_IN].clock = lambda: now[0]
    report, heavy_board = "/tickets/acme/web/report", "/tickets/acme/web?attention=awaiting_review"
    async with web.browser_session() as client:
        await web.sign_in(client, "olivia")  # /tickets: 1
        statuses = []
        for _ in range(15):
            async with client.get(report, allow_redirects=False) as response:
                statuses.append(response.status)
                refused, text, retry = response, await response.text(), response.headers.get("Retry-After")
        assert statuses == [200] * 14 + [429]  # 1 + 14 x 20 = 281: one more report is past 300
        assert retry is not None and 1 <= int(retry) <= 60
        assert refused.headers["Content-Security-Policy"] and "<svg" not in text and "cody" not in text
        async with client.get(heavy_board, allow_redirects=False) as response:
            assert response.status == 429 and "/tickets/acme/web/12" not in await response.text()
        async with client.get("/tickets/acme/web", allow_redirects=False) as response:
            assert response.status == 200  # 282: a plain page still fits
        async with web.browser_session() as other:
            await web.sign_in(other, "mallory")
            async with other.get(report, allow_redirects=False) as response:
                assert response.status == 200
        now[0] += 60
        async with client.get(report, allow_redirects=False) as response:
            assert response.status == 200 and "cody" in await response.text()
