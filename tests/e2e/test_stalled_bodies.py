"""Bodies that stall, through the real server: dropped within 15 s, and the bytes of all bodies
in flight capped, for `/webhooks` and the API alike; what was acknowledged is never lost."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

from structlog.testing import capture_logs
from yarl import URL

from app.store.database import Database
from app.store.queue_admin import list_deliveries
from app.web.bodies import IN_FLIGHT_BYTES
from app.web.server import BODIES
from github_standin import running_standin
from support.world import REPO, World, standin_state
from tests.fakes import process_intake_settings, running_server

NEAR_24_MB = 24 * 1024 * 1024


async def stalled(url: str, path: str, length: int, sent: int, **headers: str) -> tuple[int, float]:
    """Open a request declaring `length` bytes, send `sent` of them and wait: the status and when."""
    where = URL(url)
    reader, writer = await asyncio.open_connection(where.host, where.port)
    started = time.monotonic()
    head = "".join(f"{name.replace('_', '-')}: {value}\r\n" for name, value in headers.items())
    writer.write(f"POST {path} HTTP/1.1\r\nHost: railyard\r\nContent-Length: {length}\r\n{head}\r\n".encode())
    sending = asyncio.create_task(_send(writer, sent))
    try:
        line = await asyncio.wait_for(reader.readline(), 40)
    finally:
        sending.cancel()
        writer.close()
    return int(line.split()[1]), time.monotonic() - started


async def _send(writer: asyncio.StreamWriter, size: int) -> None:
    block = b" " * (1024 * 1024)
    while size > 0:
        writer.write(block[: min(size, len(block))])
        size -= min(size, len(block))
        await writer.drain()
    await asyncio.sleep(3600)  # and then nothing more


async def test_stalled_uploads_are_dropped_and_cannot_hold_more_than_the_cap(tmp_path: Path) -> None:
    """Eight webhooks stalled one byte short of 24 MB and a stalled API command: the ones past the
    cap are 503 at once, the others 408 within 15 s; the bytes held never pass the cap; a real
    delivery sent afterwards is stored."""
    async with running_standin(standin_state()) as standin:
        url = f"sqlite:///{tmp_path}/railyard.db"
        settings = process_intake_settings(url, GITHUB_API_URL=standin.url, APP_ID="1")
        async with running_server(settings) as server:
            world = World(server, standin.state, Database(url))
            bodies = server.app[BODIES]
            most = 0

            async def watch() -> None:
                nonlocal most
                while True:
                    most = max(most, bodies.in_flight)
                    await asyncio.sleep(0.01)

            watching = asyncio.create_task(watch())
            hook = {"X_GitHub_Event": "ping", "Content_Type": "application/json"}
            uploads = [
                stalled(
                    server.url, "/webhooks", NEAR_24_MB, NEAR_24_MB - 1, X_GitHub_Delivery=f"d{n}", **hook
                )
                for n in range(8)
            ]
            token = world.github.oauth.issue_token("cody", world.github.now()).token
            api = stalled(
                server.url,
                f"/api/v1/repos/{REPO}/tickets/12/commands",
                100,
                10,
                Authorization=f"Bearer {token}",
                Idempotency_Key="stalled",
                Content_Type="application/json",
            )
            answers = await asyncio.gather(*uploads, api)
            watching.cancel()
            statuses = sorted(status for status, _ in answers)
            assert set(statuses) <= {408, 503} and statuses.count(408) >= 2, answers
            assert all(seconds < 20 for _, seconds in answers), answers
            assert answers[-1][0] == 408  # the API's stalled command: dropped, nothing recorded
            assert most <= IN_FLIGHT_BYTES and bodies.in_flight == 0
            ping = json.dumps({"zen": "Keep it logically awesome.", "hook_id": 1, "hook": {"id": 1}}).encode()
            assert (await server.deliver("ping", ping, "after-the-flood")).status == 202
    assert [d["delivery_id"] for d in list_deliveries(Database(url))] == ["after-the-flood"]


async def trickled(url: str, length: int, sent: int, every: float) -> tuple[int, float]:
    """A webhook declaring `length` bytes, `sent` of them at once, then one byte per `every` seconds
    (never a stall): the status and when."""
    where = URL(url)
    reader, writer = await asyncio.open_connection(where.host, where.port)
    started = time.monotonic()
    head = "X-GitHub-Event: ping\r\nX-GitHub-Delivery: trickled\r\nContent-Type: application/json\r\n"
    writer.write(
        f"POST /webhooks HTTP/1.1\r\nHost: railyard\r\nContent-Length: {length}\r\n{head}\r\n".encode()
    )
    writer.write(b" " * sent)

    async def drip() -> None:
        while True:
            await asyncio.sleep(every)
            writer.write(b" ")
            await writer.drain()

    dripping = asyncio.create_task(drip())
    try:
        line = await asyncio.wait_for(reader.readline(), 30)
    finally:
        dripping.cancel()
        writer.close()
    return int(line.split()[1]), time.monotonic() - started


async def test_trickled_bodies_are_dropped_and_never_keep_a_webhook_out(tmp_path: Path) -> None:
    """Three large webhooks trickled a byte at a time, under the stall limit, hold the cap: a
    normal webhook sent meanwhile is stored, and the trickled ones are dropped by their deadline."""
    mb = 1024 * 1024
    async with running_standin(standin_state()) as standin:
        url = f"sqlite:///{tmp_path}/railyard.db"
        settings = process_intake_settings(url, GITHUB_API_URL=standin.url, APP_ID="1")
        async with running_server(settings) as server:
            bodies = server.app[BODIES]  # the same bounds, scaled down: 3 MB, 1 MB kept for small bodies
            bodies.capacity, bodies.stall, bodies.rate, bodies.reserve = 3 * mb, 1.0, 10 * mb, mb
            attack = [asyncio.create_task(trickled(server.url, 20 * mb, mb - 100, 0.5)) for _ in range(3)]
            for _ in range(100):
                if bodies.in_flight >= 2 * mb - 200:
                    break
                await asyncio.sleep(0.02)
            assert bodies.in_flight >= 2 * mb - 200  # the attack holds what large bodies may
            hook = {"zen": "x" * 2000, "hook_id": 1, "hook": {"id": 1}}
            assert (await server.deliver("ping", json.dumps(hook).encode(), "during-the-jam")).status == 202
            answers = await asyncio.gather(*attack)
            assert {status for status, _ in answers} <= {408, 503}, answers
            assert all(seconds < 10 for _, seconds in answers), answers
            assert bodies.in_flight == 0
    assert [d["delivery_id"] for d in list_deliveries(Database(url))] == ["during-the-jam"]


async def test_bodies_cut_off_by_their_clients_are_refused_quietly(tmp_path: Path) -> None:
    """Unsigned requests that send part of a body and hang up (or half-close) are refused like
    any bad body: no "unexpected error" with a traceback for each one (a log flood anyone can
    cause), one throttled refusal line, and the buffers given back."""
    settings = process_intake_settings(f"sqlite:///{tmp_path}/railyard.db")
    async with running_server(settings) as server:
        where = URL(server.url)
        with capture_logs() as logs:
            for half_close in (False, True) * 10:
                _, writer = await asyncio.open_connection(where.host, where.port)
                writer.write(
                    b"POST /webhooks HTTP/1.1\r\nHost: railyard\r\nX-GitHub-Event: ping\r\n"
                    b'X-GitHub-Delivery: cut\r\nContent-Length: 1000\r\n\r\n{"zen":'
                )
                await writer.drain()
                await asyncio.sleep(0.05)
                if half_close:
                    writer.write_eof()
                writer.close()
            await asyncio.sleep(0.5)
        assert server.app[BODIES].in_flight == 0

    unexpected = [line for line in logs if line["log_level"] in ("error", "critical")]
    refused = [line for line in logs if line["event"] == "webhook refused"]
    assert unexpected == [] and len(refused) == 1 and refused[0]["status"] == 400
