"""The body budget on a real aiohttp server: large bodies cannot take the part kept for small
ones, even when they declare no length, and every byte counted is given back."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiohttp
from aiohttp import web

from app.web.bodies import BodyBudget, BodyRefused

KB = 1024


@asynccontextmanager
async def reading(budget: BodyBudget, release: asyncio.Event) -> AsyncIterator[str]:
    """A server whose one route reads the body under `budget` and holds it until `release`."""

    async def handle(request: web.Request) -> web.Response:
        try:
            async with budget.body(request, 1024 * KB) as body:
                await release.wait()
                return web.Response(text=str(len(body)))
        except BodyRefused as refused:
            return web.Response(status=refused.status, text=refused.message)

    app = web.Application()
    app.router.add_post("/", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        await runner.cleanup()


async def chunks(size: int) -> AsyncIterator[bytes]:
    """`size` bytes sent chunked (no Content-Length)."""
    for _ in range(size // (16 * KB)):
        yield b" " * (16 * KB)


async def test_a_chunked_body_that_grows_large_cannot_take_the_small_bodies_share() -> None:
    """With 300 KB of 400 KB open to large bodies, one large body is read and held; a second,
    chunked, is refused once it grows large; a small body is still read; all is given back."""
    budget = BodyBudget(capacity=400 * KB, small=64 * KB, reserve=100 * KB)
    release = asyncio.Event()
    async with reading(budget, release) as url, aiohttp.ClientSession() as client:
        first = asyncio.create_task(client.post(url, data=b" " * (288 * KB)))
        for _ in range(200):
            if budget.large_in_flight >= 288 * KB:
                break
            await asyncio.sleep(0.01)
        async with client.post(url, data=chunks(96 * KB)) as second:
            assert second.status == 503
        small = asyncio.create_task(client.post(url, data=b" " * (32 * KB)))
        await asyncio.sleep(0.2)
        release.set()
        async with await first as answer, await small as small_answer:
            assert (answer.status, small_answer.status) == (200, 200)
    assert budget.in_flight == 0 and budget.large_in_flight == 0
