"""The one set of test doubles and builders, shared by every test directory.

The in-memory fakes of the handlers' ports live in the modules of this package (`store`,
`github`, `configs`, `roles`, `ancestry`, `clock`, `ports`); `ports.FakePorts` wires them.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import respx
from aiohttp import web
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from sqlalchemy import text

from app.bootstrap import server
from app.github.client import GitHubClient
from app.runtime.metrics import Metrics
from app.settings import Settings
from app.store.database import Database
from app.store.queue import queue_depth
from github_standin import signed_headers as standin_headers
from policies.commands import Accept, Claim, Command, Context, Deliver, Draft, Publish
from policies.engine import apply_all, decide, observe
from policies.events import Event
from policies.model import Actor, Ticket, TicketKey
from policies.notices import Notice, NoticeContext, decide_notice
from policies.rails import Observation, ObservationContext, RailPolicy
from policies.refusals import Refusal
from policies.states import Role, WorkState
from tests.fakes.clock import StillClock as StillClock  # re-exported: `from tests.fakes import StillClock`

START = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)

REQUESTER = Actor("rachel", frozenset({Role.REQUESTER}))
RUNNER = Actor("coder-bot[bot]", frozenset({Role.RUNNER}))
OTHER_RUNNER = Actor("helper-bot[bot]", frozenset({Role.RUNNER}))
REVIEWER = Actor("rita", frozenset({Role.REVIEWER}))
MAINTAINER = Actor("max", frozenset({Role.REPOSITORY_MAINTAINER}))
NOBODY = Actor("nora")


@dataclass
class Clock:
    """A clock that moves one second per reading, so comment times are strictly ordered."""

    now: datetime = START
    step: timedelta = timedelta(seconds=1)

    def __call__(self) -> datetime:
        self.now += self.step
        return self.now


# GitHub comment ids are unique across all of GitHub; so are these, across all tests.
_COMMENT_IDS = itertools.count(1_000_000_001)


@dataclass
class Comments:
    """Builds command contexts the way GitHub comments arrive: rising ids and times."""

    clock: Clock = field(default_factory=Clock)

    def context(self, actor: Actor, **overrides: object) -> Context:
        """A context for a new comment by `actor`; the comment id is the operation id."""
        comment_id = next(_COMMENT_IDS)
        at = self.clock()
        values: dict[str, object] = {
            "actor": actor,
            "operation_id": str(comment_id),
            "at": at,
            "comment_id": comment_id,
            "comment_at": at,
            "policy_version": "blob-sha-1",
        }
        values.update(overrides)
        return Context(**values)  # type: ignore[arg-type]


# -- the web server, on a loopback port ------------------------------------------------

WEBHOOK_SECRET = "it's a secret to everybody"
FIXTURES = Path(__file__).parent.parent / "fixtures" / "webhooks"


def example(host: str, event: str, name: str) -> bytes:
    """A real payload from `@octokit/webhooks-examples`, as stored under tests/fixtures."""
    return (FIXTURES / host / event / name).read_bytes()


def signed_headers(body: bytes, event: str, delivery_id: str, secret: str = WEBHOOK_SECRET) -> dict[str, str]:
    """The headers GitHub sends with a webhook delivery (signed as the stand-in signs its own)."""
    return standin_headers(body, event, delivery_id, secret)


def server_env(database_url: str, github_url: str, **extra: str) -> dict[str, str]:
    """The environment of a configured `railyard serve` subprocess on `database_url`, talking to
    the GitHub at `github_url` (`http://127.0.0.1:9`: nothing listens, calls fail fast)."""
    return {
        "DATABASE_URL": database_url,
        "APP_ID": "1",
        "PRIVATE_KEY": private_key_pem(),
        "WEBHOOK_SECRET": WEBHOOK_SECRET,
        "GITHUB_API_URL": github_url,
        **extra,
    }


def app_settings(database_url: str, **overrides: str) -> Settings:
    """Settings of a configured app (setup mode when APP_ID is overridden to '')."""
    values = {
        "APP_ID": "12345",
        "PRIVATE_KEY": private_key_pem(),
        "WEBHOOK_SECRET": WEBHOOK_SECRET,
        "DATABASE_URL": database_url,
        "GITHUB_API_URL": "http://127.0.0.1:9/never-called",
        **overrides,
    }
    return Settings(_env_file=None, **{k: v for k, v in values.items() if v != ""})  # type: ignore[call-arg]


@asynccontextmanager
async def running_server(settings: Settings, **create_options: Any) -> AsyncIterator[ServerHandle]:
    """The real aiohttp server, started on 127.0.0.1 with a free port, and a client for it."""
    app = server(settings, **create_options)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    async with aiohttp.ClientSession(f"http://127.0.0.1:{port}") as client:
        try:
            yield ServerHandle(app, client, f"http://127.0.0.1:{port}")
        finally:
            await runner.cleanup()


@dataclass
class ServerHandle:
    """A running server: its app (for its collaborators) and an HTTP client pointed at it."""

    app: web.Application
    client: aiohttp.ClientSession
    url: str

    async def deliver(
        self, event: str, body: bytes, delivery_id: str | None = None, secret: str = WEBHOOK_SECRET
    ) -> aiohttp.ClientResponse:
        """POST a signed webhook delivery."""
        delivery_id = delivery_id or str(uuid.uuid4())
        async with self.client.post(
            "/webhooks", data=body, headers=signed_headers(body, event, delivery_id, secret)
        ) as r:
            await r.read()
            return r


async def drained(database: Database, timeout: float = 30.0) -> None:
    """Wait until no stored delivery is pending (the worker has processed everything)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while (await asyncio.to_thread(queue_depth, database))[0]:
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError("the worker did not drain the queue in time")
        await asyncio.sleep(0.05)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class ServerProcess:
    """`railyard serve` as a real process, for tests that kill and restart it."""

    env: dict[str, str]
    cwd: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    log: Path | None = None
    command: list[str] | None = None  # `railyard serve` unless given

    @property
    def url(self) -> str:
        """Where it listens."""
        return f"http://127.0.0.1:{self.port}"

    async def start(self, timeout: float = 30.0) -> None:
        """Start it and wait until /healthz answers."""
        self.log = self.cwd / f"serve-{self.port}.log"
        env = {**os.environ, **self.env, "PORT": str(self.port), "HOST": "127.0.0.1"}
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                self.command or [str(Path(sys.executable).parent / "railyard"), "serve"],
                env=env,
                cwd=self.cwd,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = asyncio.get_running_loop().time() + timeout
        async with aiohttp.ClientSession() as client:
            while True:
                if self.process.poll() is not None:
                    raise RuntimeError(f"railyard serve exited: {self.log.read_text()[-2000:]}")
                try:
                    async with client.get(f"{self.url}/healthz") as response:
                        if response.status in (200, 503):
                            return
                except aiohttp.ClientError:
                    pass
                if asyncio.get_running_loop().time() > deadline:
                    raise TimeoutError("railyard serve did not start")
                await asyncio.sleep(0.05)

    def kill(self) -> None:
        """SIGKILL: no shutdown hooks, no flushing."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        """SIGTERM and wait for a clean exit."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=30)


@functools.cache
def private_key_pem() -> str:
    """A throwaway RSA key, as the app's PRIVATE_KEY (generated once per test run)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


GITHUB_API = "http://127.0.0.1:9/api/v3"


def token_response(token: str = "ghs_test_token", minutes: int = 60) -> dict[str, Any]:
    """GitHub's answer to POST /app/installations/{id}/access_tokens."""
    expires = (datetime.now(UTC) + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "token": token,
        "expires_at": expires,
        "permissions": {"issues": "write"},
        "repository_selection": "all",
    }


def token_route(installation: int = 7, token: str = "ghs_test_token") -> respx.Route:
    """respx answers the installation's token request (POST .../access_tokens) with `token`."""
    return respx.post(f"{GITHUB_API}/app/installations/{installation}/access_tokens").mock(
        return_value=httpx.Response(201, json=token_response(token))
    )


@asynccontextmanager
async def started_client(**options: Any) -> AsyncIterator[GitHubClient]:
    """A started client of the app (the test key) pointed at respx's GitHub, closed afterwards.

    `options` go to `GitHubClient` (`clock`, `http_cache`, `limits`).
    """
    settings = app_settings("sqlite://", GITHUB_API_URL=GITHUB_API, PRIVATE_KEY=private_key_pem())
    client = GitHubClient(settings, Metrics(), **options)
    await client.start()
    try:
        yield client
    finally:
        await client.close()


def reset_schema(database: Database) -> None:
    """Empty a PostgreSQL test database completely (then `migrate` builds it again)."""
    with database.engine.begin() as connection:
        connection.execute(text("DROP SCHEMA public CASCADE"))
        connection.execute(text("CREATE SCHEMA public"))


@dataclass
class Story:
    """A ticket's life told through the pure core: commands and observations, one a minute.

    Keeps the events in order, as the log would, so renderers can be tested without a database.
    """

    number: int = 12
    environments: tuple[str, ...] = ("production",)
    ticket: Ticket = field(init=False)
    events: list[Event] = field(default_factory=list)
    minute: int = 0

    def __post_init__(self) -> None:
        self.ticket = Ticket(TicketKey("acme/app", self.number))

    def _at(self) -> datetime:
        self.minute += 1
        return START + timedelta(minutes=self.minute)

    def command(self, command: Command, actor: Actor, **context: Any) -> Story:
        """Run a command that must not be refused."""
        at = self._at()
        ctx = Context(
            actor=actor,
            operation_id=f"story-{self.minute}",
            at=at,
            comment_id=5000 + self.minute,
            comment_at=at,
            policy_version="blob-1",
            environments=self.environments,
            **context,
        )
        decision = decide(self.ticket, command, ctx)
        assert not isinstance(decision, Refusal), decision
        return self._record(decision)

    def observe(self, observation: Observation) -> Story:
        """Record what a repository or deployment event showed."""
        ctx = ObservationContext(
            "github",
            f"story-{self.minute}",
            self._at(),
            policy_version="blob-1",
            policy=RailPolicy(environments=self.environments),
        )
        decision = observe(self.ticket, observation, ctx)
        assert not isinstance(decision, Refusal), decision
        return self._record(decision)

    def notice(self, notice: Notice) -> Story:
        """Record what railyard noticed without a command (an overdue claim, the issue closed)."""
        ctx = NoticeContext("railyard", f"story-{self.minute}", self._at(), policy_version="blob-1")
        decision = decide_notice(self.ticket, notice, ctx)
        assert not isinstance(decision, Refusal), decision
        return self._record(decision)

    def _record(self, events: tuple[Event, ...]) -> Story:
        self.ticket = apply_all(self.ticket, events)
        self.events.extend(events)
        return self

    def walk_to(self, state: WorkState, *, commit: str = "a1b2c3d4e5f6", pull: int | None = None) -> Story:
        """draft → open → claimed → delivered → accepted, stopping at `state`."""
        deliver = Deliver(summary="Retries now stop after 5 tries.", commit=commit, pull_request=pull)
        steps: dict[WorkState | None, tuple[Command, Actor]] = {
            None: (Draft(), REQUESTER_AND_OWNER),
            WorkState.DRAFT: (
                Publish(description="Stop retrying forever.", first_assignee="rachel"),
                REQUESTER_AND_OWNER,
            ),
            WorkState.OPEN: (Claim(), RUNNER),
            WorkState.CLAIMED: (deliver, RUNNER),
            WorkState.DELIVERED: (Accept(), REVIEWER),
        }
        while self.ticket.work is not state:
            self.command(*steps[self.ticket.work])
        return self


REQUESTER_AND_OWNER = Actor("rachel", frozenset({Role.REQUESTER, Role.TASK_OWNER}))


def manifest_conversion(**overrides: Any) -> dict[str, Any]:
    """GitHub's answer to POST /app-manifests/{code}/conversions (the example in @octokit/openapi)."""
    path = Path(__file__).parent.parent / "fixtures" / "github" / "app-manifest-conversion.json"
    answer: dict[str, Any] = json.loads(path.read_text())
    return {**answer, **overrides}
