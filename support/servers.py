"""The web server on a loopback port, in this process or as a `railyard serve` process, and
what it needs: a configured app's settings, a throwaway key, the webhook secret, signed deliveries."""

from __future__ import annotations

import asyncio
import functools
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from app.bootstrap import server
from app.settings import Settings
from app.store.database import Database
from app.store.queue import queue_depth
from github_standin import signed_headers as standin_headers
from support.ports import free_port

WEBHOOK_SECRET = "it's a secret to everybody"


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
    """Settings of a configured app (setup mode when APP_ID is overridden to ''), with
    railyard's defaults otherwise: the benches measure those. The tests' servers take
    `settings_for_tests` (re-exported by `tests.fakes` as `app_settings`)."""
    values = {
        "APP_ID": "12345",
        "PRIVATE_KEY": private_key_pem(),
        "WEBHOOK_SECRET": WEBHOOK_SECRET,
        "DATABASE_URL": database_url,
        "GITHUB_API_URL": "http://127.0.0.1:9/never-called",
        **overrides,
    }
    return Settings(_env_file=None, **{k: v for k, v in values.items() if v != ""})  # type: ignore[arg-type]


TEST_SETTINGS = {"INTAKE_WRITER": "thread"}
"""What the tests' servers change in `app_settings` (docs/testing.md): the intake written on a
thread, not by the writer process (railyard's default on SQLite), which costs about 1.2 s of CPU
to start (its imports) in every server a test starts. The door's tests, the writer's own and every
test that runs `railyard serve` as a process keep the writer process."""

UNPACED = {"outbox_spacing": 0.0, "surface_interval": 0.0}
"""The outbox's pacing of GitHub writes, off in the tests' servers unless a test asks for it: the
second between an installation's content writes and the second between two edits of one surface
would make every command wait a second in tests that are not about them
(tests/integration/test_outbox.py and test_surfaces.py are)."""


def settings_for_tests(database_url: str, **overrides: str) -> Settings:
    """`app_settings` as the tests' servers run (`TEST_SETTINGS`) unless `overrides` say otherwise."""
    return app_settings(database_url, **{**TEST_SETTINGS, **overrides})


def process_intake_settings(database_url: str, **overrides: str) -> Settings:
    """`settings_for_tests` with railyard's default intake on SQLite: the writer process."""
    return settings_for_tests(database_url, INTAKE_WRITER="process", **overrides)


def server_for_tests(settings: Settings, **create_options: Any) -> AbstractAsyncContextManager[ServerHandle]:
    """`running_server`, unpaced (`UNPACED`) unless `create_options` say otherwise."""
    return running_server(settings, **{**UNPACED, **create_options})


@asynccontextmanager
async def running_server(settings: Settings, **create_options: Any) -> AsyncIterator[ServerHandle]:
    """The real aiohttp server, started on 127.0.0.1 with a free port, and a client for it;
    `create_options` go to `app.bootstrap.server`."""
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
