"""Supervised loops: an iteration that raises is logged and backed off, the loop goes on,
/healthz answers 503 while a loop has failed past its limit and 200 once it recovers, and
shutdown closes everything whatever a loop did."""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from app.bootstrap import server
from app.runtime.supervisor import Loop, Supervisor
from app.store.intake_process import ProcessDeliveryWriter
from app.web.server import SUPERVISOR, WRITER
from tests.fakes import process_intake_settings


@dataclass
class Flaky:
    """An iteration that raises while `failing`, like a loop whose database is away."""

    failing: bool = True
    calls: int = 0
    finish_raises: bool = False

    async def step(self, stop: asyncio.Event) -> bool:
        self.calls += 1
        if self.failing:
            raise OSError("connection refused")
        return False

    async def finish(self) -> None:
        if self.finish_raises:
            raise RuntimeError("could not let go")


@dataclass
class Ahead:
    """The wall clock, moved forward by the test."""

    offset: float = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


@asynccontextmanager
async def server_with(extra: Loop, clock: Callable[[], float]) -> AsyncIterator[tuple[web.Application, str]]:
    """The real server on SQLite, its own loops plus `extra`, reported on by `clock`."""

    async def start(tmp: Path) -> tuple[web.AppRunner, web.Application, str]:
        app = server(process_intake_settings(f"sqlite:///{tmp}/railyard.db"))
        app[SUPERVISOR] = Supervisor([*app[SUPERVISOR].loops, extra], clock=clock)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return runner, app, f"http://127.0.0.1:{port}"

    with tempfile.TemporaryDirectory() as tmp:
        runner, app, url = await start(Path(tmp))
        try:
            yield app, url
        finally:
            await runner.cleanup()


async def healthz(url: str) -> tuple[int, dict[str, Any]]:
    async with aiohttp.ClientSession() as client, client.get(f"{url}/healthz") as response:
        return response.status, await response.json()


async def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached"
        await asyncio.sleep(0.005)


def flaky_loop(flaky: Flaky, clock: Callable[[], float]) -> Loop:
    return Loop(
        "flaky",
        flaky.step,
        interval=0.01,
        stuck_after=5.0,
        finish=flaky.finish,
        backoff_base=0.001,
        backoff_cap=0.005,
        clock=clock,
    )


async def test_a_failing_loop_goes_on_and_healthz_is_503_past_its_limit_then_200() -> None:
    """Raising iterations are retried; 200 while within the limit, 503 past it, 200 after recovery."""
    flaky, clock = Flaky(), Ahead()
    loop = flaky_loop(flaky, clock)
    async with server_with(loop, clock) as (_, url):
        await wait_for(lambda: flaky.calls >= 3)  # it kept going after raising
        status, report = await healthz(url)
        assert status == 200 and report["loops"]["flaky"]["consecutive_failures"] >= 3
        assert report["loops"]["flaky"]["last_error"] == "OSError"  # the kind only, never the message

        clock.offset += 10.0  # failing for longer than its 5 s limit
        status, report = await healthz(url)
        assert status == 503 and report["status"] == "degraded"
        assert report["loops"]["flaky"]["healthy"] is False
        assert all(r["healthy"] for name, r in report["loops"].items() if name != "flaky")

        flaky.failing = False
        await wait_for(lambda: loop.failures == 0)
        status, report = await healthz(url)
        assert status == 200 and report["loops"]["flaky"]["healthy"] is True


async def test_healthz_says_where_the_intake_commits_and_when_the_thread_took_over() -> None:
    """`intake_writer`: "process" while the writer process runs; once it dies, "thread (...)"
    (that the thread then stores: tests/integration/test_intake_process.py)."""
    flaky, clock = Flaky(), Ahead()
    async with server_with(flaky_loop(flaky, clock), clock) as (app, url):
        writer = app[WRITER]
        assert isinstance(writer, ProcessDeliveryWriter)
        _, report = await healthz(url)
        assert report["intake_writer"] == "process"
        child = writer._child
        assert child is not None
        child.kill()
        await wait_for(lambda: writer.in_process)
        _, report = await healthz(url)
        assert report["intake_writer"].startswith("thread")


async def test_shutdown_closes_everything_even_after_a_loop_failed() -> None:
    """A loop that failed and then fails while stopping: the server still stops every loop and the intake."""
    flaky, clock = Flaky(finish_raises=True), Ahead()
    loop = flaky_loop(flaky, clock)
    async with server_with(loop, clock) as (app, _):
        await wait_for(lambda: flaky.calls >= 2)
        supervisor, writer = app[SUPERVISOR], app[WRITER]
        assert isinstance(writer, ProcessDeliveryWriter)
        child = writer._child
    assert all(each.ended for each in supervisor.loops)
    assert child is not None and child.returncode == 0  # the intake's writer process stopped


async def test_a_loop_hung_inside_an_iteration_is_reported_stuck_past_its_limit() -> None:
    """An iteration that never returns: healthy within the limit, stuck (unhealthy) past it."""
    hang, entered, clock = asyncio.Event(), asyncio.Event(), Ahead()

    async def step(stop: asyncio.Event) -> bool:
        entered.set()
        await hang.wait()
        return False

    loop = Loop("hung", step, interval=0.01, stuck_after=5.0, clock=clock)
    supervisor = Supervisor([loop], clock=clock)
    supervisor.start()
    await asyncio.wait_for(entered.wait(), 10)
    assert supervisor.report()[0] is True
    clock.offset += 10.0
    healthy, reports = supervisor.report()
    assert healthy is False and reports["hung"]["stuck"] is True
    hang.set()
    await supervisor.close()
    assert supervisor.report()[1]["hung"]["ended"] is True
