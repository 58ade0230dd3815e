"""The pages answer bad input and a failing GitHub with a clear page, never a 500: a forged board
cursor is no filter, an oversized sign-out form is a 400, and GitHub failing (or a revoked token)
at the one-repository check is the 502 page (or sign-in again), as at the repository-list check."""

from __future__ import annotations

import asyncio
import base64
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from app.web.access import RECHECK_SECONDS
from app.web.oauth import SIGN_IN
from github_standin import Fault
from support.web_world import WebWorld, seed_tickets, web_world


@pytest.fixture
async def web(tmp_path: Path) -> AsyncIterator[WebWorld]:
    async with web_world(tmp_path) as world:
        await seed_tickets(world)
        yield world


def cursor(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


async def land_without_asking_one_repository(web: WebWorld, client: object, login: str) -> None:
    """Sign in through the OAuth flow, landing on a page that asks GitHub about no single repository."""
    web.github.oauth.approving = login
    async with client.get("/tickets/acme/nothing") as response:  # type: ignore[attr-defined]
        assert response.status == 404 and f"Signed in as <strong>{login}</strong>" in await response.text()


@pytest.mark.parametrize("moment", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"])
async def test_a_forged_board_cursor_is_no_filter_not_a_500(web: WebWorld, moment: str) -> None:
    """`?after=` is parsed leniently (page_reads: anything unknown is no filter); a cursor whose
    time parses but cannot be converted to UTC must not answer a 5xx."""
    async with web.browser_session() as client:
        await web.sign_in(client, "olivia")
        async with client.get(f"/tickets/acme/web?after={cursor(moment + '|5')}", allow_redirects=False) as r:
            assert r.status < 500, await r.text()


async def test_a_sign_out_form_with_many_fields_is_refused_not_a_500(web: WebWorld) -> None:
    """A sign-out POST of a few hundred bytes with more than 20 fields: a 4xx, not a 5xx."""
    async with web.browser_session() as client:
        page = await web.sign_in(client, "olivia")
        csrf = re.search(r'name="csrf" value="([^"]*)"', page)
        assert csrf is not None
        body = "&".join(f"f{i}=x" for i in range(25)) + "&csrf=" + csrf.group(1)
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        async with client.post("/logout", data=body, headers=headers, allow_redirects=False) as r:
            assert r.status < 500, await r.text()


async def test_github_failing_on_the_one_repository_check_says_so_not_a_500(web: WebWorld) -> None:
    """rita reads acme/web only through GitHub's answer about it alone (GET /repos/acme/web). When
    GitHub fails that call the page should say GitHub did not answer (502, as at the re-check),
    not a JSON 500 'internal error'."""
    async with web.browser_session() as client:
        await land_without_asking_one_repository(web, client, "rita")
        web.github.inject("GET", r"^/repos/acme/web$", Fault(status=502))
        async with client.get("/tickets/acme/web", allow_redirects=False) as r:
            text = await r.text()
            assert (r.status, r.content_type) == (502, "text/html"), (r.status, text)


async def test_a_revoked_token_at_the_one_repository_check_sends_to_sign_in_not_a_500(web: WebWorld) -> None:
    """GitHub no longer accepts rita's token: the page sends her to sign in again (as the list
    re-check does), never a 500."""
    access = web.server.app[SIGN_IN].access
    now = [1_000_000.0]
    access.clock = lambda: now[0]
    async with web.browser_session() as client:
        await land_without_asking_one_repository(web, client, "rita")
        now[0] += RECHECK_SECONDS - 30  # the installation list is still fresh
        web.github.oauth.tokens.clear()  # rita revoked the app's authorization on GitHub
        async with client.get("/tickets", allow_redirects=False) as r:
            assert r.status == 303, (r.status, await r.text())


@pytest.mark.parametrize(
    "limit",
    [
        Fault(status=403, primary_rate_limit=True),  # x-ratelimit-remaining 0 and its reset
        Fault(status=403, secondary_rate_limit=True),  # a message and no time: wait a minute
    ],
    ids=["primary", "secondary without headers"],
)
async def test_a_rate_limited_recheck_says_github_did_not_answer_not_that_nothing_is_readable(
    web: WebWorld, limit: Fault
) -> None:
    """olivia's token runs out of GitHub's rate limit at the five-minute re-check: GitHub answers
    403 to every call, with x-ratelimit-remaining 0, or (its secondary limit) only a message
    that names no time (`app.github.rate_limits` reads it so). Her private board must say GitHub
    did not answer (as for a 502), not 404 'nothing here, or you cannot read it'; and once the
    limit is over, the board shows again without waiting five more minutes."""
    access = web.server.app[SIGN_IN].access
    now = [1_000_000.0]
    access.clock = lambda: now[0]
    async with web.browser_session() as client:
        await web.sign_in(client, "olivia")
        now[0] += RECHECK_SECONDS + 1
        web.github.inject("GET", r"^/user/installations$", *[limit] * 3)
        web.github.inject("GET", r"^/repos/acme/vault$", *[limit] * 3)
        async with client.get("/tickets/acme/vault", allow_redirects=False) as r:
            limited_status, text = r.status, await r.text()
        web.github.faults.clear()  # the limit is over
        now[0] += 61
        async with client.get("/tickets/acme/vault", allow_redirects=False) as r:
            after_status = r.status
    assert (limited_status, after_status) == (502, 200), (limited_status, after_status, text[-300:])


async def test_a_dead_tokens_401_does_not_sign_out_the_accounts_other_session(web: WebWorld) -> None:
    """rita is signed in twice (a laptop whose token GitHub no longer accepts, a phone whose
    token is live). Both load acme/web's board, which she reads only through GitHub's answer
    about it alone, at the same moment: the phone's ask waits for the laptop's, whose token
    GitHub answers 401, and the phone — whose token GitHub accepts — is sent to sign in again
    with its cookie cleared, as if its own sign-in had been revoked. One after the other, the
    phone's board is 200."""
    laptop, phone = web.browser_session(), web.browser_session()
    async with laptop, phone:
        await land_without_asking_one_repository(web, laptop, "rita")
        await land_without_asking_one_repository(web, phone, "rita")
        # GitHub answers the laptop's ask (the first) 401, half a second late: its token expired.
        web.github.inject("GET", r"^/repos/acme/web$", Fault(status=401, delay=0.5))

        async def board(client: object) -> int:
            async with client.get("/tickets/acme/web", allow_redirects=False) as r:  # type: ignore[attr-defined]
                return int(r.status)

        first = asyncio.ensure_future(board(laptop))
        await asyncio.sleep(0.2)  # the laptop's ask is in flight
        statuses = tuple(await asyncio.gather(first, board(phone)))
    assert statuses == (303, 200), statuses
