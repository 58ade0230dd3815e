"""The web pages' world: the real server with sign-in through the GitHub stand-in's OAuth flow.

acme/web (public) and acme/vault (private) are installed; olivia can read both, mallory only
acme/web. `sign_in_as` makes the stand-in's browser account approve the app for that login.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from app.store.database import Database
from github_standin import RunningStandin, StandinState, running_standin
from support.servers import ServerHandle, server_for_tests, settings_for_tests
from support.world import World, comment_payload, standin_state

PRIVATE_REPO = "acme/vault"


def web_state() -> StandinState:
    """The e2e world's GitHub, with a private repository and who may read what."""
    state = standin_state()
    state.repositories["acme/web"].issues[13].body = "Write the upload docs"
    vault = state.add_repository(PRIVATE_REPO, files={}, private=True)
    vault.branches["main"] = "2" * 40
    state.add_issue(PRIVATE_REPO, 7, title="Rotate the vault keys", body="Secret plans")
    state.permissions.update(
        {
            ("acme/web", "olivia"): "admin",
            (PRIVATE_REPO, "olivia"): "admin",
            ("acme/web", "mallory"): "read",
        }
    )
    return state


@dataclass
class WebWorld:
    """The server, the stand-in and the database, and sign-in as someone."""

    server: ServerHandle
    standin: RunningStandin
    database: Database

    @property
    def github(self) -> StandinState:
        return self.standin.state

    def world(self) -> World:
        """The webhook verbs of the e2e world, on this server."""
        return World(self.server, self.github, self.database)

    def browser_session(self) -> aiohttp.ClientSession:
        """A cookie-keeping HTTP client (cookies of 127.0.0.1 accepted), like a browser's."""
        return aiohttp.ClientSession(self.server.url, cookie_jar=aiohttp.CookieJar(unsafe=True))

    async def sign_in(self, client: aiohttp.ClientSession, login: str, path: str = "/tickets") -> str:
        """`login` signs in through GitHub's OAuth flow from `path`; the page they land on."""
        self.github.oauth.approving = login
        async with client.get(path) as response:
            assert response.status == 200, await response.text()
            return await response.text()


def web_settings(tmp_path: Path, standin_url: str, **overrides: str) -> dict[str, str]:
    """What a configured server with sign-in needs, pointed at the stand-in for API and web."""
    state = standin_state().oauth
    return {
        "GITHUB_API_URL": standin_url,
        "GITHUB_WEB_URL": standin_url,
        "APP_ID": "1",
        "GITHUB_CLIENT_ID": state.client_id,
        "GITHUB_CLIENT_SECRET": state.client_secret,
        **overrides,
    }


@contextlib.asynccontextmanager
async def web_world(tmp_path: Path, **overrides: str) -> AsyncIterator[WebWorld]:
    """The server with sign-in, its stand-in and database, for the block's duration."""
    async with running_standin(web_state()) as standin:
        url = f"sqlite:///{tmp_path}/railyard.db"
        settings = settings_for_tests(url, **web_settings(tmp_path, standin.url, **overrides))
        async with server_for_tests(settings) as server:
            yield WebWorld(server, standin, Database(url))


async def say_in(web: WebWorld, repo: str, login: str, body: str, number: int) -> None:
    """`login` comments `body` on `repo`#`number` (an installed acme repository); wait until processed."""
    world = web.world()
    repository = web.github.repositories[repo]
    written = web.github.add_comment(repo, number, body, user=login)
    payload = comment_payload(login, body, number, id=written.id, user_id=web.github.user_id(login))
    payload["repository"].update({"full_name": repo, "name": repo.split("/")[1], "id": repository.id})
    payload["repository"]["private"] = repository.private
    await world.send("issue_comment", payload)


async def seed_tickets(web: WebWorld) -> None:
    """acme/web#12 delivered by cody (a summary with markup in it), #13 open; acme/vault#7 open."""
    world = web.world()
    await world.say("rachel", "/publish", 12)
    await world.say("cody", "/claim", 12)
    await world.say("cody", f"/deliver branch=agent/12-fix\n{HOSTILE}", 12)
    await world.say("rachel", "/publish --no-code", 13)
    await say_in(web, PRIVATE_REPO, "olivia", "/publish --no-code", 7)


HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'
