"""PostgreSQL restarts under a running server: every loop backs off while it is away and
resumes when it returns, so deliveries are processed and GitHub writes performed again.

The server under test has a private PostgreSQL cluster (initdb into a temporary directory,
a free port, run as the `postgres` user), never the shared test server.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from app.store.database import Database
from github_standin import running_standin
from support.world import World, standin_state
from tests.fakes import ServerHandle, app_settings, free_port, running_server

BIN = Path("/usr/lib/postgresql/15/bin")


@dataclass
class PrivateCluster:
    """A PostgreSQL cluster of this test's own, started and stopped at will."""

    directory: Path
    port: int

    @property
    def url(self) -> str:
        """The database `railyard` in it, as the server's DATABASE_URL."""
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/railyard"

    def run(self, program: str, *arguments: str) -> None:
        """Run one of PostgreSQL's programs as the `postgres` user (we run as root)."""
        line = " ".join(f"'{part}'" for part in (str(BIN / program), *arguments))
        subprocess.run(["su", "postgres", "-c", line], check=True, capture_output=True, timeout=60)

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        options = f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 -c fsync=off"
        data, log = str(self.directory / "data"), str(self.directory / "server.log")
        self.run("pg_ctl", "-D", data, "-o", options, "-l", log, "-w", "start")

    def stop(self) -> None:
        """Stop it at once (`-m fast`: open connections are terminated, as in a restart)."""
        self.run("pg_ctl", "-D", str(self.directory / "data"), "-m", "fast", "-w", "stop")


@pytest.fixture
def cluster() -> Iterator[PrivateCluster]:
    """initdb into a temporary directory owned by `postgres`, with a database `railyard`."""
    if shutil.which("su") is None or not (BIN / "initdb").exists():
        pytest.skip("needs PostgreSQL 15's binaries and su")
    directory = Path(tempfile.mkdtemp(prefix="railyard-pg-"))
    shutil.chown(directory, "postgres", "postgres")
    private = PrivateCluster(directory, free_port())
    private.run("initdb", "-D", str(directory / "data"), "-U", "postgres", "--auth=trust")
    private.start()
    try:
        private.run("createdb", "-h", "127.0.0.1", "-p", str(private.port), "-U", "postgres", "railyard")
        yield private
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):  # already stopped
            private.stop()
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
async def world_on(cluster: PrivateCluster) -> AsyncIterator[World]:
    """The real server on the private cluster, talking to the stand-in."""
    state = standin_state()
    async with running_standin(state) as standin:
        settings = app_settings(cluster.url, GITHUB_API_URL=standin.url, APP_ID="1")
        async with running_server(settings) as server:
            yield World(server, state, Database(cluster.url))


async def health(server: ServerHandle) -> tuple[int, dict[str, Any]]:
    """/healthz's status and report."""
    async with server.client.get("/healthz") as response:
        return response.status, await response.json()


async def until(condition: Callable[[], Awaitable[bool]], timeout: float = 60.0) -> None:
    """Poll an async condition until it holds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not await condition():
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError("condition not reached")
        await asyncio.sleep(0.1)


def failing_loops(report: dict[str, Any]) -> set[str]:
    """The loops a /healthz report says are failing now."""
    return {name for name, loop in report.get("loops", {}).items() if loop["consecutive_failures"]}


async def deliver_until_stored(world: World, event: str, payload: dict[str, Any]) -> None:
    """Send like GitHub redelivering: the same delivery id until the server stores it."""
    body, delivery_id = json.dumps(payload).encode(), str(uuid.uuid4())
    for _ in range(600):
        response = await world.server.deliver(event, body, delivery_id)
        if response.status in (200, 202):
            return
        await asyncio.sleep(0.1)
    raise TimeoutError("the server never stored the delivery")


async def test_deliveries_and_effects_resume_after_postgres_restarts(
    world_on: World, cluster: PrivateCluster
) -> None:
    """With the database gone every loop fails and backs off (503); once it is back, the
    worker processes the next command and the outbox writes its reply and status comment."""
    world = world_on
    await world.say("rachel", "/publish")
    assert world.ticket().work.value == "open"

    cluster.stop()

    async def database_gone() -> bool:
        return (await health(world.server))[0] == 503

    await until(database_gone)

    async def loops_failing() -> bool:  # every loop meets the outage and says so
        _, report = await health(world.server)
        return {"worker", "outbox"} <= failing_loops(report)

    await until(loops_failing, timeout=30.0)  # a TimeoutError fails the test if they never do
    cluster.start()
    world.database.engine.dispose()  # the test's own connections died with the server
    await deliver_until_stored(world, "issue_comment", world.write("nora", "/claim"))
    await world.settle()

    [reply] = world.replies()
    assert "Refused" in reply and "/claim" in reply
    assert world.status_comments() == [world.expected_status()]

    async def healthy_again() -> bool:
        status, report = await health(world.server)
        return status == 200 and all(loop["healthy"] for loop in report["loops"].values())

    await until(healthy_again)
