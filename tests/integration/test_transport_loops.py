"""The aiohttp transport across event loops: a session serves one loop, so a transport opened
in one (`GitHubClient.start`) and used in the next gets a session of that loop."""

from __future__ import annotations

import asyncio
import gc
import warnings

import httpx
from aiohttp import web
from aiohttp.test_utils import TestServer

from app.github.aiohttp_transport import AiohttpTransport


async def _ok(request: web.Request) -> web.Response:
    return web.Response(text="ok")


def test_opened_in_one_loop_it_still_answers_in_the_next() -> None:
    """A client started in one event loop and used in another (a command line that runs twice)
    gets a session of the second loop, with no warning of an unclosed first one."""
    answered: list[int] = []

    async def serve_and_ask(transport: AiohttpTransport) -> None:
        app = web.Application()
        app.router.add_get("/echo", _ok)
        async with TestServer(app, host="127.0.0.1") as server:
            async with httpx.AsyncClient(transport=transport) as client:
                answered.append((await client.get(str(server.make_url("/echo")))).status_code)

    async def start(transport: AiohttpTransport) -> None:
        transport.open()

    transport = AiohttpTransport()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        asyncio.run(start(transport))
        asyncio.run(serve_and_ask(transport))
        gc.collect()
    assert answered == [200]
