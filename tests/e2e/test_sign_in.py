"""Sign-in with GitHub on the real server, through the GitHub stand-in's OAuth flow (no browser):
the redirects, the state check, the cookies' flags, the CSP, access re-checked with ETags."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import aiohttp
import pytest
from sqlalchemy import text

from app.web.access import RECHECK_SECONDS
from app.web.oauth import EXCHANGES_PER_MINUTE, SIGN_IN
from app.web.sessions import SESSION_COOKIE, STATE_COOKIE
from github_standin import Fault
from support.web_world import PRIVATE_REPO, WebWorld, say_in, web_settings, web_world
from tests.fakes import app_settings, running_server


@pytest.fixture
async def web(tmp_path: Path) -> AsyncIterator[WebWorld]:
    """The server with sign-in, over http on 127.0.0.1."""
    async with web_world(tmp_path) as world:
        yield world


def cookie_header(response: aiohttp.ClientResponse, name: str) -> str:
    """The Set-Cookie line for `name`, as the server sent it."""
    [line] = [v for v in response.headers.getall("Set-Cookie", []) if v.startswith(f"{name}=")]
    return line


async def test_a_page_without_a_session_redirects_to_login_with_the_way_back(web: WebWorld) -> None:
    """/tickets/acme/web without a session answers 303 to /login?next=/tickets/acme/web."""
    async with web.server.client.get("/tickets/acme/web?work=open", allow_redirects=False) as response:
        assert response.status == 303
        target = urlsplit(response.headers["Location"])
    assert target.path == "/login" and parse_qs(target.query) == {"next": ["/tickets/acme/web?work=open"]}


async def test_login_sends_the_browser_to_github_with_state_in_a_sealed_cookie(web: WebWorld) -> None:
    """/login redirects to GitHub's authorize page with the client id, a state and the callback."""
    async with web.server.client.get("/login", allow_redirects=False) as response:
        assert response.status == 302
        target = urlsplit(response.headers["Location"])
        line = cookie_header(response, STATE_COOKIE)
    assert f"{target.scheme}://{target.netloc}{target.path}" == f"{web.standin.url}/login/oauth/authorize"
    query = parse_qs(target.query)
    assert query["client_id"] == [web.github.oauth.client_id]
    assert query["redirect_uri"] == [f"{web.server.url}/login/callback"]
    assert len(query["state"][0]) >= 32 and query["state"][0] not in line  # sealed, not readable
    assert "HttpOnly" in line and "SameSite=Lax" in line and "Max-Age=600" in line and "Secure" not in line


async def test_signing_in_lands_on_the_page_asked_for_with_an_httponly_session(web: WebWorld) -> None:
    """After GitHub's flow the person sees their repositories, private ones included, signed in by login."""
    async with web.browser_session() as client:
        web.github.oauth.approving = "olivia"
        async with client.get("/login?next=/tickets", allow_redirects=False) as response:
            authorize = response.headers["Location"]
        async with client.get(authorize, allow_redirects=False) as response:
            back = response.headers["Location"]
        async with client.get(back, allow_redirects=False) as response:
            assert response.status == 303 and response.headers["Location"] == "/tickets"
            line = cookie_header(response, SESSION_COOKIE)
        async with client.get("/tickets") as response:
            page = await response.text()
    assert "HttpOnly" in line and "SameSite=Lax" in line and "Max-Age=28800" in line
    assert "acme/web" in page and PRIVATE_REPO in page and "olivia" in page


async def test_a_callback_whose_state_does_not_match_the_cookie_is_refused(web: WebWorld) -> None:
    """A forged or replayed callback (login CSRF) gets 400 and no session, and GitHub is never asked."""
    async with web.browser_session() as client:
        web.github.oauth.approving = "mallory"
        async with client.get("/login", allow_redirects=False) as response:
            authorize = response.headers["Location"]
        async with client.get(authorize, allow_redirects=False) as response:
            code = parse_qs(urlsplit(response.headers["Location"]).query)["code"][0]
        async with client.get(f"/login/callback?code={code}&state=forged", allow_redirects=False) as response:
            assert response.status == 400
            assert not any(v.startswith(SESSION_COOKIE) for v in response.headers.getall("Set-Cookie", []))
    assert not web.github.calls_to("POST", "/login/oauth/access_token")


async def test_a_return_path_to_another_site_is_replaced_by_tickets(web: WebWorld) -> None:
    """`next` must be a local path: //evil.example and https://evil.example land on /tickets."""
    for target in ("//evil.example/x", "https://evil.example/", "/\\evil.example"):
        async with web.browser_session() as client:
            web.github.oauth.approving = "olivia"
            async with client.get("/login", params={"next": target}, allow_redirects=False) as response:
                authorize = response.headers["Location"]
            async with client.get(authorize, allow_redirects=False) as response:
                back = response.headers["Location"]
            async with client.get(back, allow_redirects=False) as response:
                assert response.headers["Location"] == "/tickets", target


async def test_under_https_every_cookie_is_secure_and_the_callback_is_public_url(tmp_path: Path) -> None:
    """With PUBLIC_URL https, the state cookie is Secure and GitHub is told PUBLIC_URL/login/callback."""
    async with web_world(tmp_path, PUBLIC_URL="https://railyard.example.com") as web:
        async with web.server.client.get("/login", allow_redirects=False) as response:
            query = parse_qs(urlsplit(response.headers["Location"]).query)
            line = cookie_header(response, STATE_COOKIE)
    assert query["redirect_uri"] == ["https://railyard.example.com/login/callback"]
    assert "Secure" in line


async def test_pages_carry_a_strict_content_security_policy(web: WebWorld) -> None:
    """Every page forbids scripts, external styles, framing and foreign form targets."""
    async with web.browser_session() as client:
        await web.sign_in(client, "olivia")
        async with client.get("/tickets") as response:
            policy = response.headers["Content-Security-Policy"]
    assert "default-src 'none'" in policy and "style-src 'self'" in policy
    assert (
        "frame-ancestors 'none'" in policy and "form-action 'self'" in policy and "script-src" not in policy
    )


async def test_without_the_oauth_client_the_pages_say_how_to_enable_sign_in(tmp_path: Path) -> None:
    """No GITHUB_CLIENT_ID: /tickets explains the settings instead of redirecting to a broken /login."""
    async with web_world(tmp_path, GITHUB_CLIENT_ID="", GITHUB_CLIENT_SECRET="") as web:
        async with web.server.client.get("/tickets", allow_redirects=False) as response:
            page = await response.text()
        async with web.server.client.get("/login", allow_redirects=False) as login:
            pass
    assert response.status == 503 and "GITHUB_CLIENT_ID" in page and "GITHUB_CLIENT_SECRET" in page
    assert login.status == 404


async def test_logout_needs_the_session_csrf_token_and_then_ends_the_session(web: WebWorld) -> None:
    """A POST /logout without the form's token is refused (403); with it the cookie is cleared."""
    async with web.browser_session() as client:
        page = await web.sign_in(client, "olivia")
        csrf = page.split('name="csrf" value="')[1].split('"')[0]
        async with client.post("/logout", data={"csrf": "wrong"}, allow_redirects=False) as response:
            assert response.status == 403
        async with client.post("/logout", data={"csrf": csrf}, allow_redirects=False) as response:
            assert response.status == 303
        async with client.get("/tickets", allow_redirects=False) as response:
            assert response.status == 303 and response.headers["Location"].startswith("/login")


async def test_a_sign_out_form_is_read_only_for_a_session_and_only_a_few_kilobytes(web: WebWorld) -> None:
    """A stranger's POST /logout is sent to sign in before its body is read; a session's 5 MB form is 413."""
    async with web.server.client.post("/logout", data=b"x" * (5 * 1024 * 1024), allow_redirects=False) as r:
        assert r.status == 303 and r.headers["Location"] == "/login"
    async with web.browser_session() as client:
        await web.sign_in(client, "olivia")
        async with client.post("/logout", data={"csrf": "x" * (5 * 1024 * 1024)}, allow_redirects=False) as r:
            assert r.status == 413
        async with client.get("/tickets", allow_redirects=False) as response:
            assert response.status == 200  # still signed in: nothing was done for it


async def test_logout_revokes_the_token_so_a_copied_cookie_is_worth_nothing(web: WebWorld) -> None:
    """Signing out asks GitHub to revoke the token: the cookie, replayed, no longer reads anything."""
    async with web.browser_session() as client:
        page = await web.sign_in(client, "olivia")
        csrf = page.split('name="csrf" value="')[1].split('"')[0]
        copied = {c.key: c.value for c in client.cookie_jar}
        async with client.post("/logout", data={"csrf": csrf}, allow_redirects=False) as response:
            assert response.status == 303
    assert not web.github.oauth.tokens  # the only token issued is gone at GitHub
    async with web.browser_session() as thief:
        thief.cookie_jar.update_cookies(copied)
        async with thief.get("/tickets/acme/web", allow_redirects=False) as response:
            assert response.status == 303 and response.headers["Location"].startswith("/login")


async def test_signing_out_on_one_server_ends_the_session_on_the_other_at_once(
    web: WebWorld, tmp_path: Path
) -> None:
    """Two server processes on one database: after sign-out on the first, the copied cookie no
    longer reads the private board on the second, though that one had just served it."""
    await say_in(web, PRIVATE_REPO, "olivia", "/publish --no-code", 7)
    url = f"sqlite:///{tmp_path}/railyard.db"
    settings = app_settings(url, **web_settings(tmp_path, web.standin.url))
    async with running_server(settings, run_worker=False) as other:
        async with web.browser_session() as client:
            page = await web.sign_in(client, "olivia")
            csrf = page.split('name="csrf" value="')[1].split('"')[0]
            copied = {c.key: c.value for c in client.cookie_jar}
            async with aiohttp.ClientSession(other.url, cookie_jar=aiohttp.CookieJar(unsafe=True)) as thief:
                thief.cookie_jar.update_cookies(copied)
                async with thief.get(f"/tickets/{PRIVATE_REPO}", allow_redirects=False) as response:
                    board = await response.text()
                    assert response.status == 200 and f'href="/tickets/{PRIVATE_REPO}/7"' in board
                async with client.post("/logout", data={"csrf": csrf}, allow_redirects=False) as response:
                    assert response.status == 303
                async with thief.get(f"/tickets/{PRIVATE_REPO}", allow_redirects=False) as response:
                    assert response.status == 303 and response.headers["Location"].startswith("/login")
                    assert f"{PRIVATE_REPO}/7" not in await response.text()


async def test_an_account_keeps_at_most_ten_sessions_and_signing_out_of_one_keeps_the_others(
    web: WebWorld,
) -> None:
    """Eleven sign-ins of one account: the first session ends (its cookie reads nothing more, its
    row is gone), the ten others still read; signing out of one of them ends that one only."""
    signed_in: list[tuple[dict[str, str], str]] = []
    for _ in range(11):
        async with web.browser_session() as client:
            page = await web.sign_in(client, "olivia")
            csrf = page.split('name="csrf" value="')[1].split('"')[0]
            signed_in.append(({c.key: c.value for c in client.cookie_jar}, csrf))

    async def statuses() -> list[int]:
        found = []
        for cookies, _ in signed_in:
            async with web.browser_session() as client:
                client.cookie_jar.update_cookies(cookies)
                async with client.get("/tickets", allow_redirects=False) as response:
                    found.append(response.status)
        return found

    assert await statuses() == [303] + [200] * 10
    cookies, csrf = signed_in[4]
    async with web.browser_session() as client:
        client.cookie_jar.update_cookies(cookies)
        async with client.post("/logout", data={"csrf": csrf}, allow_redirects=False) as response:
            assert response.status == 303
    assert await statuses() == [303] + [200] * 3 + [303] + [200] * 6
    with web.database.read() as connection:
        rows = connection.execute(text("SELECT count(*) FROM web_sessions")).scalar_one()
    assert rows == 10


async def test_access_is_rechecked_after_five_minutes_with_conditional_requests(web: WebWorld) -> None:
    """Within 5 minutes the list is reused; then it is asked again with If-None-Match (304 when
    unchanged), and a permission GitHub withdrew takes the repository off the page."""
    access = web.server.app[SIGN_IN].access
    now = [1_000_000.0]
    access.clock = lambda: now[0]
    async with web.browser_session() as client:
        await web.sign_in(client, "olivia")
        web.github.calls.clear()
        now[0] += RECHECK_SECONDS + 1
        async with client.get("/tickets") as response:
            assert PRIVATE_REPO in await response.text()
        statuses = {c.path: c.status for c in web.github.calls if c.path.startswith("/user/installations")}
        assert statuses and set(statuses.values()) == {304}
        del web.github.permissions[(PRIVATE_REPO, "olivia")]
        async with client.get("/tickets") as response:
            assert PRIVATE_REPO in await response.text()  # still within the five minutes
        now[0] += RECHECK_SECONDS + 1
        async with client.get("/tickets") as response:
            assert PRIVATE_REPO not in await response.text()


async def test_a_token_github_no_longer_accepts_ends_the_session_at_the_next_check(web: WebWorld) -> None:
    """Once GitHub answers 401 for the token (revoked, expired), the re-check sends the person to sign in."""
    access = web.server.app[SIGN_IN].access
    now = [1_000_000.0]
    access.clock = lambda: now[0]
    async with web.browser_session() as client:
        await web.sign_in(client, "olivia")
        web.github.oauth.tokens.clear()  # the person revoked the app's authorization on GitHub
        now[0] += RECHECK_SECONDS + 1
        async with client.get("/tickets/acme/web", allow_redirects=False) as response:
            assert response.status == 303
            assert parse_qs(urlsplit(response.headers["Location"]).query) == {"next": ["/tickets/acme/web"]}
            assert "Max-Age=0" in cookie_header(response, SESSION_COOKIE)


async def test_when_github_fails_at_a_recheck_the_page_says_so_and_shows_nothing(web: WebWorld) -> None:
    """A 502 from GitHub at the re-check answers 502 naming GitHub, never a stale or empty board."""
    access = web.server.app[SIGN_IN].access
    now = [1_000_000.0]
    access.clock = lambda: now[0]
    async with web.browser_session() as client:
        await web.sign_in(client, "olivia")
        now[0] += RECHECK_SECONDS + 1
        web.github.inject("GET", "^/user/installations$", Fault(status=502))
        async with client.get("/tickets/acme/web", allow_redirects=False) as response:
            page = await response.text()
    assert response.status == 502 and "GitHub" in page and "col-open" not in page


async def test_a_replayed_state_cookie_cannot_make_railyard_exchange_codes_by_the_thousand(
    web: WebWorld,
) -> None:
    """A stranger takes one state from /login and replays it with made-up codes: past a bounded
    number of exchanges from its address the callback is 429 without asking GitHub, and a
    person signing in from another address is not held back."""
    sign_in = web.server.app[SIGN_IN]
    now = sign_in.clock()
    sign_in.clock = lambda: now  # the window is a clock minute: one that turns over mid-test refills it
    async with web.server.client.get("/login", allow_redirects=False) as response:
        state = parse_qs(urlsplit(response.headers["Location"]).query)["state"][0]
        sealed = response.cookies[STATE_COOKIE].value
    statuses = []
    for n in range(200):
        headers = {"Cookie": f"{STATE_COOKIE}={sealed}"}
        path = f"/login/callback?state={state}&code=madeup{n}"
        async with web.server.client.get(path, headers=headers, allow_redirects=False) as response:
            statuses.append(response.status)
            retry = response.headers.get("Retry-After")
    exchanges = web.github.calls_to("POST", "/login/oauth/access_token")
    assert len(exchanges) == EXCHANGES_PER_MINUTE and statuses[-1] == 429
    assert retry is not None and int(retry) > 0
    web.github.buckets.clear()  # the stand-in counts the exchanges let through against an hour's 60
    elsewhere = aiohttp.TCPConnector(local_addr=("127.0.0.2", 0))
    jar = aiohttp.CookieJar(unsafe=True)
    async with aiohttp.ClientSession(web.server.url, connector=elsewhere, cookie_jar=jar) as client:
        await web.sign_in(client, "olivia")
