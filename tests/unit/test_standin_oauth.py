"""The GitHub stand-in's sign-in endpoints answer as GitHub does, and railyard's access reads
(`app.web.access.Access`) follow their pages and use their ETags."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import httpx
import pytest

from app.settings import Settings
from app.web import access as access_module
from app.web.access import Access, _token_key
from github_standin import RunningStandin, StandinState, running_standin

CALLBACK = "http://127.0.0.1:1/login/callback"


@contextlib.asynccontextmanager
async def serving(repositories: int = 3) -> AsyncIterator[tuple[RunningStandin, httpx.AsyncClient]]:
    """acme's installation with `repositories` repositories, olivia holding read on each."""
    state = StandinState()
    state.add_installation(7, "acme")
    for index in range(repositories):
        state.add_repository(f"acme/r{index:03}", private=index % 2 == 1)
        state.permissions[(f"acme/r{index:03}", "olivia")] = "read"
    state.oauth.approving = "olivia"
    async with running_standin(state) as standin:
        async with httpx.AsyncClient(base_url=standin.url, timeout=5) as client:
            yield standin, client


async def code_for(client: httpx.AsyncClient, state: StandinState) -> str:
    """The code GitHub's authorize page sends back for the approving account."""
    query = {"client_id": state.oauth.client_id, "redirect_uri": CALLBACK, "state": "s"}
    response = await client.get("/login/oauth/authorize", params=query)
    assert response.status_code == 302
    return httpx.URL(response.headers["Location"]).params["code"]


def exchange(state: StandinState, code: str, secret: str | None = None) -> dict[str, str]:
    return {
        "client_id": state.oauth.client_id,
        "client_secret": secret or state.oauth.client_secret,
        "code": code,
    }


async def test_a_code_works_once_and_a_bad_one_is_a_200_with_github_s_error() -> None:
    """The token endpoint answers bad_verification_code with status 200, as GitHub does."""
    async with serving() as (standin, client):
        code = await code_for(client, standin.state)
        accept = {"Accept": "application/json"}
        first = await client.post(
            "/login/oauth/access_token", data=exchange(standin.state, code), headers=accept
        )
        again = await client.post(
            "/login/oauth/access_token", data=exchange(standin.state, code), headers=accept
        )
    assert first.status_code == 200 and first.json()["access_token"].startswith("ghu_")
    assert first.json()["token_type"] == "bearer" and first.json()["expires_in"] > 0
    assert again.status_code == 200 and again.json()["error"] == "bad_verification_code"


async def test_wrong_client_credentials_are_refused_with_200_and_incorrect_client_credentials() -> None:
    """A wrong client secret gets GitHub's incorrect_client_credentials, form-encoded without Accept."""
    async with serving() as (standin, client):
        code = await code_for(client, standin.state)
        response = await client.post("/login/oauth/access_token", data=exchange(standin.state, code, "nope"))
    assert response.status_code == 200 and "error=incorrect_client_credentials" in response.text


async def test_an_installation_token_may_not_read_user() -> None:
    """GET /user with an installation token is 403; without any token 401."""
    async with serving() as (standin, client):
        token = standin.state.issue_token(7)
        with_installation = await client.get("/user", headers={"Authorization": f"token {token}"})
        anonymous = await client.get("/user")
    assert (with_installation.status_code, anonymous.status_code) == (403, 401)


async def test_access_reads_every_page_and_rechecks_with_if_none_match() -> None:
    """250 repositories take three pages of 100; a fresh re-check is answered 304 on every page."""
    async with serving(250) as (standin, client):
        code = await code_for(client, standin.state)
        settings = Settings(
            _env_file=None,  # type: ignore[call-arg]
            GITHUB_API_URL=standin.url,
            GITHUB_WEB_URL=standin.url,
            GITHUB_CLIENT_ID=standin.state.oauth.client_id,
            GITHUB_CLIENT_SECRET=standin.state.oauth.client_secret,
        )
        access = Access(settings)
        try:
            token = await access.exchange(code, CALLBACK)
            person = await access.person(token)
            first = await access.readable(token)
            standin.state.calls.clear()
            again = await access.readable(token, fresh=True)
        finally:
            await access.close()
    assert person.login == "olivia" and person.account_id == standin.state.user_id("olivia")
    assert len(first) == 250 and first == again and first["acme/r001"].private
    assert [c.status for c in standin.state.calls] == [304, 304, 304, 304]  # installations + 3 pages


async def test_the_pages_conditional_answers_stay_bounded_however_many_tokens_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Forty tokens each reading a repository keep at most ETAGS_KEPT answers, the newest ones."""
    monkeypatch.setattr(access_module, "ETAGS_KEPT", 5)
    async with serving(3) as (standin, _):
        settings = Settings(_env_file=None, GITHUB_API_URL=standin.url)  # type: ignore[call-arg]
        access = Access(settings)
        try:
            tokens = [standin.state.oauth.issue_token("olivia", standin.state.now()).token for _ in range(40)]
            for token in tokens:
                assert await access.one(token, "acme/r001") is not None
            assert len(access._etags) == 5
            assert {key[0] for key in access._etags} == {_token_key(token) for token in tokens[-5:]}
        finally:
            await access.close()
